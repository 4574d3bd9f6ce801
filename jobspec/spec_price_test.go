package jobspec_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/money"
)

// TestParseSpecUnitPrice: unit_price is read exactly, and each mistake in
// it is one problem at its line saying what is wrong.
func TestParseSpecUnitPrice(t *testing.T) {
	t.Parallel()
	const jobs = "jobs:\n  - name: j\n    keywords: {keywords: [a], countries: [US]}\n"
	for _, tc := range []struct {
		name, spec string
		want       *money.Price
		err        string
	}{
		{name: "none", spec: jobs},
		{name: "per million", spec: "unit_price: {per: 1000000, amount: 50, currency: USD}\n" + jobs,
			want: &money.Price{Per: 1_000_000, Micros: 50_000_000, Currency: "USD"}},
		{name: "exact decimals", spec: "unit_price:\n  per: 1_000\n  amount: \"0.000123\"\n  currency: EUR\n" + jobs,
			want: &money.Price{Per: 1000, Micros: 123, Currency: "EUR"}},
		{name: "the bounds", spec: "unit_price: {per: 1000000000000000, amount: 1000000000, currency: JPY}\n" + jobs,
			want: &money.Price{Per: money.MaxPer, Micros: money.MaxAmount * 1_000_000, Currency: "JPY"}},
		{name: "per 0", spec: "unit_price: {per: 0, amount: 50, currency: USD}\n" + jobs,
			err: "jobs.yaml:1: per must be between 1 and 1000000000000000 API units, got 0"},
		{name: "per past int64", spec: "unit_price:\n  per: 99999999999999999999\n  amount: 50\n  currency: USD\n" + jobs,
			err: "jobs.yaml:2: per must be between 1 and 1000000000000000 API units, got 99999999999999999999"},
		{name: "per decimal", spec: "unit_price:\n  per: 1.5\n  amount: 50\n  currency: USD\n" + jobs,
			err: `jobs.yaml:2: per must be a whole number of API units, got "1.5"`},
		{name: "amount negative", spec: "unit_price:\n  per: 1000\n  amount: -5\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount must be a positive decimal number such as 50 or 0.05, got "-5"`},
		{name: "amount zero", spec: "unit_price:\n  per: 1000\n  amount: 0.0\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount must be more than 0, got "0.0"`},
		{name: "amount too precise", spec: "unit_price:\n  per: 1000\n  amount: 0.0000001\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount has more than 6 decimals, got "0.0000001"`},
		{name: "amount too large", spec: "unit_price:\n  per: 1000\n  amount: 1000000000.5\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount must be at most 1000000000, got "1000000000.5"`},
		{name: "amount in floats", spec: "unit_price:\n  per: 1000\n  amount: 5e1\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount must be a positive decimal number such as 50 or 0.05, got "5e1"`},
		{name: "amount a list", spec: "unit_price:\n  per: 1000\n  amount: [5]\n  currency: USD\n" + jobs,
			err: `jobs.yaml:3: amount must be a single value`},
		{name: "currency lowercase", spec: "unit_price:\n  per: 1000\n  amount: 5\n  currency: usd\n" + jobs,
			err: `jobs.yaml:4: currency must be an ISO 4217 currency code: three uppercase letters such as USD or EUR, got "usd"`},
		{name: "currency symbol", spec: "unit_price: {per: 1000, amount: 5, currency: $}\n" + jobs,
			err: `jobs.yaml:1: currency must be an ISO 4217 currency code: three uppercase letters such as USD or EUR, got "$"`},
		{name: "missing", spec: "unit_price: {amount: 5}\n" + jobs,
			err: "jobs.yaml:1: unit_price needs per, currency (for example unit_price: {per: 1000000, amount: 50, currency: USD}: 50 USD per million units)"},
		{name: "typo", spec: "unit_price: {pre: 1000, amount: 5, currency: USD}\n" + jobs,
			err: `jobs.yaml:1: unknown unit_price key "pre"; did you mean "per"? (expected: per, amount, currency)`},
		{name: "not a mapping", spec: "unit_price: 50 USD\n" + jobs,
			err: "jobs.yaml:1: unit_price must be a mapping (key: value)"},
		{name: "top-level typo", spec: "unit_pric: {per: 1, amount: 1, currency: USD}\n" + jobs,
			err: `jobs.yaml:1: unknown top-level key "unit_pric"; did you mean "unit_price"? (expected: jobs, retention, budget, unit_price)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec, err := jobspec.ParseSpec("jobs.yaml", []byte(tc.spec), specNow)
			if tc.err != "" {
				var specErr *jobspec.SpecError
				require.True(t, errors.As(err, &specErr), "want a *SpecError, got %v", err)
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, spec.UnitPrice)
		})
	}
}
