package money_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/money"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		micros int64
		err    string
	}{
		{in: "50", micros: 50_000_000},
		{in: "0.05", micros: 50_000},
		{in: "0.000001", micros: 1},
		{in: "1_000.25", micros: 1_000_250_000},
		{in: "007.5", micros: 7_500_000},
		{in: "1000000000", micros: 1_000_000_000_000_000},
		{in: "0.1", micros: 100_000}, // exact: no float 0.1
		{in: "1000000000.000001", err: "at most 1000000000"},
		{in: "99999999999999999999999", err: "at most 1000000000"},
		{in: "0.0000001", err: "more than 6 decimals"},
		{in: "0", err: "more than 0"},
		{in: "0.000000", err: "more than 0"},
		{in: "-1", err: "positive decimal"},
		{in: "1e3", err: "positive decimal"},
		{in: "1.", err: "positive decimal"},
		{in: ".5", err: "positive decimal"},
		{in: "", err: "positive decimal"},
		{in: "USD 5", err: "positive decimal"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := money.ParseAmount(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.micros, got)
		})
	}
}

func TestCheckCurrency(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"USD", "EUR", "JPY"} {
		require.NoError(t, money.CheckCurrency(ok), ok)
	}
	for _, bad := range []string{"usd", "US", "USDT", "U$D", "", "€"} {
		require.Error(t, money.CheckCurrency(bad), bad)
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	usd50 := money.Price{Per: 1_000_000, Micros: 50_000_000, Currency: "USD"}
	for _, tc := range []struct {
		name   string
		price  money.Price
		units  int64
		text   string
		amount string
	}{
		{name: "zero", price: usd50, units: 0, text: "0.00 USD", amount: "0.00"},
		{name: "plain", price: usd50, units: 71_399, text: "3.57 USD", amount: "3.57"},
		{name: "half a cent", price: usd50, units: 100, text: "< 0.01 USD", amount: "0.005"},
		{name: "half up at a cent and a half", price: usd50, units: 300, text: "0.02 USD", amount: "0.02"}, // 0.015
		{name: "just below half", price: usd50, units: 99, text: "< 0.01 USD", amount: "0.00495"},
		{name: "below a cent", price: usd50, units: 1, text: "< 0.01 USD", amount: "0.00005"},
		{name: "sub-micro", price: money.Price{Per: 1_000_000_000_000_000, Micros: 1, Currency: "EUR"}, units: 1, text: "< 0.01 EUR", amount: "0"},
		{name: "half up at the cent", price: money.Price{Per: 1000, Micros: 125_000, Currency: "USD"}, units: 1000, text: "0.13 USD", amount: "0.13"}, // 0.125
		{name: "thirds", price: money.Price{Per: 3, Micros: 1_000_000, Currency: "USD"}, units: 2, text: "0.67 USD", amount: "0.67"},
		{name: "grouped", price: usd50, units: 25_000_000_000, text: "1,250,000.00 USD", amount: "1250000.00"},
		{name: "negative", price: usd50, units: -71_399, text: "-3.57 USD", amount: "-3.57"},
		{
			name: "max units at max price", units: 1_000_000_000_000_000,
			price: money.Price{Per: 1, Micros: money.MaxAmount * 1_000_000, Currency: "USD"},
			text:  "1,000,000,000,000,000,000,000,000.00 USD", amount: "1000000000000000000000000.00",
		},
		{
			name: "max units at the least price", units: 1_000_000_000_000_000,
			price: money.Price{Per: money.MaxPer, Micros: 1, Currency: "USD"},
			text:  "< 0.01 USD", amount: "0.000001",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.price.Of(tc.units)
			require.Equal(t, tc.text, c.String())
			require.Equal(t, tc.amount, c.Amount())
			b, err := json.Marshal(c)
			require.NoError(t, err)
			require.JSONEq(t, `{"amount":"`+tc.amount+`","currency":"`+tc.price.Currency+`"}`, string(b))
		})
	}
}

func TestUnits(t *testing.T) {
	t.Parallel()
	p := &money.Price{Per: 1_000_000, Micros: 50_000_000, Currency: "USD"}
	require.Equal(t, "71399 units (3.57 USD)", money.Units(p, 71_399))
	require.Equal(t, "71399 units", money.Units(nil, 71_399))
	require.Equal(t, "", money.Beside(nil, 5))
	require.Equal(t, "50 USD per 1000000 units", p.String())
	require.Equal(t, "0.05 USD per 1 units", money.Price{Per: 1, Micros: 50_000, Currency: "USD"}.String())
}
