package money

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

const (
	// MaxPer is the most units a price may be stated per (catalog.MaxUnits).
	MaxPer int64 = 1_000_000_000_000_000
	// MaxAmount is the largest amount a price may state, in whole units of
	// its currency.
	MaxAmount = 1_000_000_000
	// Decimals is the most decimals an amount may have.
	Decimals = 6

	microsPerUnit = 1_000_000 // 10^Decimals
	microsPerCent = 10_000
)

// Price is what Per API units cost: Micros millionths of Currency.
type Price struct {
	// Per is the number of units the amount buys, 1 to MaxPer.
	Per int64
	// Micros is the amount in millionths of the currency, 1 to
	// MaxAmount*10^6.
	Micros int64
	// Currency is an ISO 4217 code: three uppercase letters.
	Currency string
}

var (
	amountRE   = regexp.MustCompile(`^([0-9]+)(?:\.([0-9]+))?$`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// ParseAmount reads a decimal amount ("50", "0.05", "1_000.25") exactly,
// in millionths: positive, at most Decimals decimals, at most MaxAmount.
func ParseAmount(s string) (int64, error) {
	m := amountRE.FindStringSubmatch(strings.ReplaceAll(s, "_", ""))
	if m == nil {
		return 0, errors.New("must be a positive decimal number such as 50 or 0.05")
	}
	whole, frac := strings.TrimLeft(m[1], "0"), m[2]
	if len(frac) > Decimals {
		return 0, fmt.Errorf("has more than %d decimals", Decimals)
	}
	if len(whole) > len(fmt.Sprint(MaxAmount)) {
		return 0, fmt.Errorf("must be at most %d", MaxAmount)
	}
	var w, f int64
	for _, c := range whole {
		w = w*10 + int64(c-'0')
	}
	for i := 0; i < Decimals; i++ {
		f *= 10
		if i < len(frac) {
			f += int64(frac[i] - '0')
		}
	}
	micros := w*microsPerUnit + f
	switch {
	case micros > MaxAmount*microsPerUnit:
		return 0, fmt.Errorf("must be at most %d", MaxAmount)
	case micros == 0:
		return 0, errors.New("must be more than 0")
	}
	return micros, nil
}

// CheckCurrency says whether code has the form of an ISO 4217 code.
func CheckCurrency(code string) error {
	if !currencyRE.MatchString(code) {
		return errors.New("must be an ISO 4217 currency code: three uppercase letters such as USD or EUR")
	}
	return nil
}

// Of is what units cost at p.
func (p Price) Of(units int64) Cost {
	num := new(big.Int).Mul(big.NewInt(units), big.NewInt(p.Micros))
	return Cost{micros: new(big.Rat).SetFrac(num, big.NewInt(p.Per)), Currency: p.Currency}
}

// String says the price as a spec states it: "50 USD per 1000000 units".
func (p Price) String() string {
	return fmt.Sprintf("%s %s per %d units", decimal(big.NewInt(p.Micros), Decimals, false), p.Currency, p.Per)
}

// Cost is an exact amount of money.
type Cost struct {
	micros   *big.Rat // millionths of Currency
	Currency string
}

// round is c in 1/10^places of the currency, rounded half away from zero.
func (c Cost) round(places int) *big.Int {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	r := new(big.Rat).Mul(c.micros, new(big.Rat).SetFrac(scale, big.NewInt(microsPerUnit)))
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	// (2*num + den) / (2*den): half-up on the magnitude.
	q := new(big.Int).Add(new(big.Int).Lsh(num, 1), den)
	q.Quo(q, new(big.Int).Lsh(den, 1))
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q
}

// subCent says c is not zero and less than a cent either way.
func (c Cost) subCent() bool {
	a := new(big.Rat).Abs(c.micros)
	return a.Sign() > 0 && a.Cmp(big.NewRat(microsPerCent, 1)) < 0
}

// Amount is c as a plain decimal, for machines: to the cent, rounded
// half-up ("3.57"); an amount below a cent that is not zero keeps
// Decimals decimals ("0.004"), rounded half-up.
func (c Cost) Amount() string {
	if c.subCent() {
		return decimal(c.round(Decimals), Decimals, false)
	}
	return decimal(c.round(2), 2, false)
}

// String is c for people: "1,234.57 USD", rounded half-up to the cent;
// "< 0.01 USD" for an amount that is not zero but rounds below a cent.
func (c Cost) String() string {
	if c.subCent() {
		if c.micros.Sign() < 0 {
			return "> -0.01 " + c.Currency
		}
		return "< 0.01 " + c.Currency
	}
	return decimal(c.round(2), 2, true) + " " + c.Currency
}

// MarshalJSON writes {"amount": "3.57", "currency": "USD"}.
func (c Cost) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"amount":%q,"currency":%q}`, c.Amount(), c.Currency), nil
}

// decimal writes n/10^places: two decimals kept ("3.50"), Decimals
// without trailing zeros ("0.05", "50"); its whole part grouped by
// thousands when grouped.
func decimal(n *big.Int, places int, grouped bool) string {
	s := new(big.Int).Abs(n).String()
	if len(s) <= places {
		s = strings.Repeat("0", places-len(s)+1) + s
	}
	whole, frac := s[:len(s)-places], s[len(s)-places:]
	if places == Decimals { // an amount as given: no trailing zeros
		frac = strings.TrimRight(frac, "0")
	}
	if grouped {
		var b strings.Builder
		for i, d := range whole {
			if i > 0 && (len(whole)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(d)
		}
		whole = b.String()
	}
	if n.Sign() < 0 {
		whole = "-" + whole
	}
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}

// Beside is " (3.57 USD)", what units cost at p, to write after a count
// of units; "" when p is nil (no price stated: none is guessed).
func Beside(p *Price, units int64) string {
	if p == nil {
		return ""
	}
	return " (" + p.Of(units).String() + ")"
}

// Units is "71399 units (3.57 USD)", or "71399 units" when p is nil.
func Units(p *Price, units int64) string {
	return fmt.Sprintf("%d units%s", units, Beside(p, units))
}

// PastNote is the footnote under units of the past shown as money: they
// are priced at p, today's unit_price (of the job spec in specFile),
// which may not be what they cost.
func PastNote(p *Price, specFile string) string {
	return fmt.Sprintf("money at today's unit price, the past's too: %s (unit_price of %s)", p, specFile)
}
