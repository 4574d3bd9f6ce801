package transform_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/transform"
)

func ExampleNewCSVDecoder() {
	body := "anchor;domains_count;backlinks_count;first_seen_at;extra\n" +
		"\"buy; now\";2;10;2024-01-01T00:00:00;x\n" +
		"oops;two;3;2024-01-01T00:00:00;x\n" +
		";1;1;;x\n"
	ep, _ := catalog.Lookup("anchors")
	d, err := transform.NewCSVDecoder(strings.NewReader(body), ep, transform.Options{})
	if err != nil {
		panic(err)
	}
	defer d.Release()
	fmt.Printf("drift: %+v\n", d.Drift())
	for {
		rec, rejects, err := d.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Schema().Field(0).Name, rec.Column(0))
		fmt.Println(rec.Schema().Field(3).Name, rec.Column(3))
		for _, r := range rejects {
			fmt.Println(r)
		}
		rec.Release()
	}
	fmt.Println("rows:", d.Rows(), "rejected:", d.Rejected())
	// Output:
	// drift: {Unknown:[extra] Missing:[last_seen_at]}
	// anchor ["buy; now" ""]
	// first_seen_at [1704067200000000 (null)]
	// line 3: column "domains_count": "two" is not an integer
	// rows: 2 rejected: 1
}

func ExampleNewJSONDecoder() {
	body := `{"meta":{"request_id":"r1","status_code":200,"success":true,"total":3},"data":[` +
		`{"domain":"a.example","domain_score":37,"country":"DE","backlinks_counts":[3,0,12],"matches_count":2,"new":1},` +
		`{"domain":"b.example","domain_score":1.5,"country":"FR","backlinks_counts":[1,0,0],"matches_count":1},` +
		`{"domain":"c.example","domain_score":null,"country":"US","backlinks_counts":[0,4,0],"matches_count":1}]}`
	ep, _ := catalog.Lookup("matrix")
	d, err := transform.NewJSONDecoder(strings.NewReader(body), ep, transform.Options{})
	if err != nil {
		panic(err)
	}
	defer d.Release()
	fmt.Println("total:", string(d.Meta()["total"]))
	for {
		rec, rejects, err := d.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Println(rec.Schema().Field(1).Name, rec.Column(1))
		fmt.Println(rec.Schema().Field(4).Name, rec.Column(4))
		for _, r := range rejects {
			fmt.Println(r)
		}
		rec.Release()
	}
	fmt.Printf("drift: %+v\n", d.Drift())
	fmt.Println("rows:", d.Rows(), "rejected:", d.Rejected())
	// Output:
	// total: 3
	// domain_score [37 (null)]
	// backlinks_counts [[3 0 12] [0 4 0]]
	// line 2: field "domain_score": 1.5 is not an integer: it has a fraction or an exponent
	// drift: {Unknown:[new] Missing:[ip_address]}
	// rows: 2 rejected: 1
}
