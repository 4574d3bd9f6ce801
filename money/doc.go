// Package money turns API units into what they cost, at the price a job
// spec states (unit_price: {per, amount, currency}), and writes it for
// people: "3.57 USD", rounded half-up to the cent ("< 0.01 USD" for an
// amount below a cent that is not zero). It never guesses a
// price: without one, callers print units alone.
//
// Amounts are exact: a price is held in millionths of its currency
// (integers), and a cost is computed with math/big, so no float rounds it
// and no count of units up to catalog.MaxUnits overflows.
package money
