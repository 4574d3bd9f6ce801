package filter

import "testing"

// benchExpr is a typical three-condition filter of links.
const benchExpr = "page_score > 50 AND anchor LIKE '%seo%' AND is_nofollow = false"

// benchRow is a links row as the sandbox would serve it: a switch on the
// field name over values at hand.
func benchRow() Row {
	type links struct {
		pageScore  int64
		anchor     string
		isNofollow bool
	}
	l := &links{pageScore: 72, anchor: "the best seo tools for agencies", isNofollow: false}
	return func(field string, _ int) Value {
		switch field {
		case "page_score":
			return Value{Int: l.pageScore}
		case "anchor":
			return Value{Str: l.anchor}
		case "is_nofollow":
			return Value{Bool: l.isNofollow}
		}
		return Value{Null: true}
	}
}

func BenchmarkMatch(b *testing.B) {
	e, err := Parse(benchExpr, endpoint(b, "links"))
	if err != nil {
		b.Fatal(err)
	}
	r := benchRow()
	if !e.Match(r) {
		b.Fatal("the benchmark row should match")
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Match(r)
	}
}

func BenchmarkParse(b *testing.B) {
	ep := endpoint(b, "links")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(benchExpr, ep); err != nil {
			b.Fatal(err)
		}
	}
}
