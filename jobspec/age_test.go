package jobspec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/jobspec"
)

func TestParseMaxAge(t *testing.T) {
	t.Parallel()
	kw := "    keywords: {keywords: [a], countries: [US]}\n"
	for _, tc := range []struct {
		age  string
		want time.Duration
	}{
		{"20h", 20 * time.Hour}, {"7d", 7 * 24 * time.Hour}, {"1d12h", 36 * time.Hour}, {"90m", 90 * time.Minute},
		{"2w", 14 * 24 * time.Hour}, {"0", 0}, {"45s", 45 * time.Second},
	} {
		spec, err := jobspec.ParseSpec("jobs.yaml", []byte("jobs:\n  - name: j\n    max_age: "+tc.age+"\n"+kw), specNow)
		require.NoError(t, err, tc.age)
		require.Equal(t, tc.want, spec.Jobs[0].MaxAge, tc.age)
		require.True(t, spec.Jobs[0].MaxAgeSet)
		require.Equal(t, tc.want, spec.Jobs[0].Tasks(specNow)[0].MaxAge)
	}
	// The defaults: 20h; cut for a schedule that ticks more often.
	for _, tc := range []struct {
		schedule string
		want     time.Duration
	}{
		{"", 20 * time.Hour}, {"0 3 * * *", 20 * time.Hour}, {"0 * * * *", 50 * time.Minute}, {"*/6 * * * *", 5 * time.Minute},
		{"0 3 * * 1", 20 * time.Hour},
	} {
		sched := ""
		if tc.schedule != "" {
			sched = "    schedule: \"" + tc.schedule + "\"\n"
		}
		spec, err := jobspec.ParseSpec("jobs.yaml", []byte("jobs:\n  - name: j\n"+sched+kw), specNow)
		require.NoError(t, err)
		require.Equal(t, tc.want, spec.Jobs[0].MaxAge, tc.schedule)
		require.False(t, spec.Jobs[0].MaxAgeSet)
	}
	// An endpoint's and the keywords' own.
	spec, err := jobspec.ParseSpec("jobs.yaml", []byte(`jobs:
  - name: j
    max_age: 2d
    targets: [{url: a.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {max_age: 0}, summary: {}}
    keywords: {keywords: [a], countries: [US], max_age: 3h}
`), specNow)
	require.NoError(t, err)
	var ages []time.Duration
	for _, task := range spec.Jobs[0].Tasks(specNow) {
		ages = append(ages, task.MaxAge)
	}
	require.Equal(t, []time.Duration{0, 48 * time.Hour, 3 * time.Hour}, ages)

	for _, tc := range []struct{ body, want string }{
		{"    max_age: soon\n" + kw, `jobs.yaml:3: max_age "soon" is not an age: write a number with a unit, such as 20h, 7d`},
		{"    max_age: -1h\n" + kw, `jobs.yaml:3: max_age "-1h" is not an age`},
		{"    max_age: 20\n" + kw, `jobs.yaml:3: max_age "20" is not an age`},
		{"    max_age: 400d\n" + kw, `jobs.yaml:3: max_age "400d" is more than 366d, the most it may be`},
		{"    max_age: 99999999999999999999h\n" + kw, `jobs.yaml:3: max_age "99999999999999999999h" is more than 366d`},
		{"    max_age: [1h]\n" + kw, `jobs.yaml:3: max_age must be a single value`},
		{"    max_age: \"\"\n" + kw, `jobs.yaml:3: max_age "" is not an age`},
		{"    max-age: 1h\n" + kw, `jobs.yaml:3: unknown job key "max-age"; did you mean "max_age"?`},
		{"    targets: [{url: a.com, scope: PAGE}]\n    endpoints:\n      overview: {max_age: 1 day}\n", `jobs.yaml:5: max_age "1 day" is not an age`},
		{"    keywords: {keywords: [a], countries: [US], max_age: \"1h\\n\"}\n", `jobs.yaml:3: max_age "1h\n" is not an age`},
	} {
		_, err := jobspec.ParseSpec("jobs.yaml", []byte("jobs:\n  - name: j\n"+tc.body), specNow)
		var specErr *jobspec.SpecError
		require.True(t, errors.As(err, &specErr), "%q: want a *SpecError, got %v", tc.body, err)
		require.Contains(t, err.Error(), tc.want)
	}
}
