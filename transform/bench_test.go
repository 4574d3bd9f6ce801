package transform_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/redact"
	"github.com/seoetl/etl/transform"
)

// linksBody is a links CSV body of n rows shaped like the API's: mostly
// plain cells, some quoted titles with ';' and '"', some unicode, some empty
// cells.
func linksBody(ep *catalog.Endpoint, n int) []byte {
	var b bytes.Buffer
	b.WriteString(strings.Join(ep.FieldNames(), ";"))
	b.WriteByte('\n')
	bools := [2]string{"false", "true"}
	for i := range n {
		title := fmt.Sprintf("Post number %d about backlinks", i)
		switch i % 10 {
		case 3:
			title = fmt.Sprintf(`"Q&A; the ""best"" post %d"`, i)
		case 7:
			title = fmt.Sprintf("Über café – 日本語 %d", i)
		}
		redirect := ""
		if i%5 == 0 {
			redirect = fmt.Sprintf("http://old.example.com/r/%d", i)
		}
		fmt.Fprintf(&b, "https://site%d.example.org/blog/2024/05/post-%d.html;https://target.example.com/page/%d;anchor text %d;%s;%s;;;;192.0.%d.%d;en;%d;%d;%d;200;%d;%d;2023-%02d-%02dT%02d:%02d:%02d;2024-05-%02dT12:00:00;site%d.example.org;%s;%s;false;false;false;false;%s;%s;false\n",
			i%997, i, i%50, i, redirect, title, i%256, i%251, 1000+i*7, i%300, i%1200, i%101, (i*7)%101,
			1+i%12, 1+i%28, i%24, i%60, (i*7)%60, 1+i%28, i%997,
			bools[i%2], bools[(i/2)%2], bools[(i/3)%2], bools[(i/5)%2])
	}
	return b.Bytes()
}

func TestLinksBody(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "links")
	got := decodeAll(t, linksBody(ep, 1000), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 256})
	require.Empty(t, got.Rejects)
	require.Len(t, got.Rows, 1000)
	require.Equal(t, `Q&A; the "best" post 3`, got.Rows[3]["source_title"])
}

// BenchmarkCSVDecoder decodes 100k links rows; its bytes/s compares with
// loading the same CSV through psql's COPY.
func BenchmarkCSVDecoder(b *testing.B) {
	ep, _ := catalog.Lookup("links")
	benchDecode(b, "csv", linksBody(ep, 100_000), ep, nil)
}

// BenchmarkCSVDecoderRedacted is BenchmarkCSVDecoder with a redactor,
// which looks for the key in every text value.
func BenchmarkCSVDecoderRedacted(b *testing.B) {
	ep, _ := catalog.Lookup("links")
	benchDecode(b, "csv", linksBody(ep, 100_000), ep, redact.New(benchKey))
}

// benchKey is an API key of the length of the real ones.
const benchKey = "sk_live_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"

// benchDecode decodes body, of 100k rows, in format.
func benchDecode(b *testing.B, format string, body []byte, ep *catalog.Endpoint, r *redact.Redactor) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(b, 0)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := transform.NewDecoder(bytes.NewReader(body), ep, format, transform.Options{Allocator: mem, Redactor: r})
		if err != nil {
			b.Fatal(err)
		}
		for {
			rec, rejects, err := d.Next(context.Background())
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if len(rejects) > 0 {
				b.Fatal(rejects[0])
			}
			rec.Release()
		}
		if d.Rows() != 100_000 {
			b.Fatalf("decoded %d rows", d.Rows())
		}
		d.Release()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100_000), "ns/row")
}

// matrixJSONBody is a matrix JSON body of n rows shaped like the sandbox's
// (meta first, members in catalog order, three targets).
func matrixJSONBody(n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"meta":{"request_id":"bench","status_code":200,"success":true,"urls":["a.example","b.example","c.example"],"scope":"ROOT_DOMAIN","total":%d},"data":[`, n)
	countries := [4]string{"DE", "US", "FR", "JP"}
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"domain":"site%d.example.org","domain_score":%d,"ip_address":"10.%d.%d.%d","country":"%s","backlinks_counts":[%d,%d,%d],"matches_count":%d}`,
			i, i%101, i%256, (i/256)%256, i%251, countries[i%4], i%17, (i*7)%300, i%3, 1+i%3)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// BenchmarkJSONDecoder decodes 100k matrix rows.
func BenchmarkJSONDecoder(b *testing.B) {
	ep, _ := catalog.Lookup("matrix")
	benchDecode(b, "json", matrixJSONBody(100_000), ep, nil)
}

// BenchmarkJSONDecoderRedacted is BenchmarkJSONDecoder with a redactor.
func BenchmarkJSONDecoderRedacted(b *testing.B) {
	ep, _ := catalog.Lookup("matrix")
	benchDecode(b, "json", matrixJSONBody(100_000), ep, redact.New(benchKey))
}

func TestMatrixJSONBody(t *testing.T) {
	t.Parallel()
	ep := endpoint(t, "matrix")
	got := decodeJSON(t, matrixJSONBody(1000), ep, transform.Options{Allocator: newAllocator(t), BatchRows: 256})
	require.Empty(t, got.Rejects)
	require.Len(t, got.Rows, 1000)
	require.Equal(t, []any{int64(5), int64(35), int64(2)}, got.Rows[5]["backlinks_counts"])
}
