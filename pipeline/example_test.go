package pipeline_test

import (
	"fmt"
	"time"

	"github.com/seoetl/etl/jobspec"
)

// A job spec is validated as a whole, every problem with its file:line,
// before anything runs.
func ExampleParseSpec() {
	spec := []byte(`jobs:
  - name: nightly
    targets:
      - {url: example.com, scope: ROOT_DOMAIN}
      - {url: example.com/blog/, scope: SUBFOLDER}
    endpoints:
      overview: {}
      summary: {limit: 0}
`)
	_, err := jobspec.ParseSpec("jobs.yaml", spec, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC))
	fmt.Println(err)
	// Output:
	// jobs.yaml:5: target "example.com/blog/" has scope SUBFOLDER, which summary does not allow (allowed: ROOT_DOMAIN, SUBDOMAIN, PAGE; summary is at line 8)
	// jobs.yaml:8: limit must be between 1 and 2147483647, got 0
}

// A valid job expands into tasks: each endpoint for each target, then each
// keyword in each country for each month.
func ExampleJob_Tasks() {
	spec := []byte(`jobs:
  - name: nightly
    targets: [{url: example.com, scope: ROOT_DOMAIN}]
    endpoints: {overview: {}, summary: {}}
    keywords: {keywords: [seo tools], countries: [US, DE]}
`)
	now := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	s, err := jobspec.ParseSpec("jobs.yaml", spec, now)
	if err != nil {
		panic(err)
	}
	for _, t := range s.Jobs[0].Tasks(now) {
		fmt.Println(t)
	}
	// Output:
	// overview example.com (ROOT_DOMAIN)
	// summary example.com (ROOT_DOMAIN)
	// keyword-metrics "seo tools" US 2026-11
	// keyword-metrics "seo tools" DE 2026-11
}
