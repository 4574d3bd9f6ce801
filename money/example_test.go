package money_test

import (
	"fmt"

	"github.com/seoetl/etl/money"
)

func ExampleUnits() {
	micros, err := money.ParseAmount("50") // unit_price: {per: 1000000, amount: 50, currency: USD}
	if err != nil {
		panic(err)
	}
	price := &money.Price{Per: 1_000_000, Micros: micros, Currency: "USD"}
	fmt.Println(money.Units(price, 71_399))
	fmt.Println(money.Units(price, 99))
	fmt.Println(money.Units(nil, 71_399))
	// Output:
	// 71399 units (3.57 USD)
	// 99 units (< 0.01 USD)
	// 71399 units
}
