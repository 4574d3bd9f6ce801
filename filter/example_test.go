package filter_test

import (
	"fmt"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/filter"
)

func Example() {
	links, _ := catalog.Lookup("links")

	e, err := filter.Parse(`page_score > 50 and (anchor like '%seo%' or is_new = TRUE)`, links)
	if err != nil {
		panic(err)
	}
	fmt.Println(e)
	fmt.Println(e.Fields())

	rows := []map[string]filter.Value{
		{"page_score": {Int: 72}, "anchor": {Str: "best seo tools"}, "is_new": {Bool: false}},
		{"page_score": {Int: 72}, "anchor": {Str: "SEO"}, "is_new": {Bool: false}},
		{"page_score": {Int: 12}, "anchor": {Str: "seo"}, "is_new": {Bool: true}},
		{"page_score": {Null: true}, "anchor": {Str: "seo"}, "is_new": {Bool: true}},
	}
	for _, r := range rows {
		fmt.Println(e.Match(func(field string, _ int) filter.Value { return r[field] }))
	}

	_, err = filter.Parse("page_score >= 50 AND anchor LIKE 'seo%' AND domain_scor > 10", links)
	fmt.Println(err)
	_, err = filter.Parse("page_score >", links)
	fmt.Println(err)
	// Output:
	// page_score > 50 AND (anchor LIKE '%seo%' OR is_new = true)
	// [page_score anchor is_new]
	// true
	// false
	// false
	// false
	// filter: at column 45: unknown field "domain_scor" of links; did you mean "domain_score"? (fields: source_url, target_url, anchor, redirect_url, source_title, target_title, image_url, image_alt, ip_address, lang, source_size, external_links_count, internal_links_count, response_code, page_score, domain_score, first_seen_at, last_seen_at, source_domain, is_nofollow, is_ugc, is_sponsored, is_form, is_frame, is_image, is_sitewide_main, is_new, is_lost)
	// filter: at column 13: expected an integer for page_score after ">", got the end of the expression
}

// On matrix, backlinks_counts[n] is the count of target n, numbered from 1;
// CheckTargets holds the expression against the request's number of urls.
func ExampleExpr_CheckTargets() {
	matrix, _ := catalog.Lookup("matrix")
	e, err := filter.Parse("backlinks_counts[1] = 0 AND backlinks_counts[3] > 0", matrix)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.MaxTarget())
	fmt.Println(e.CheckTargets(3))
	fmt.Println(e.CheckTargets(2))

	gap := func(field string, index int) filter.Value {
		return filter.Value{Ints: []int64{0, 5, 2}} // the whole list; Match picks target n
	}
	fmt.Println(e.Match(gap))
	// Output:
	// 3
	// <nil>
	// filter: at column 46: backlinks_counts[3] addresses target 3 but the request has 2; expected an index from 1 to 2
	// true
}
