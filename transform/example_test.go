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
