package sandbox_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/seoetl/etl/sandbox"
)

// A sandbox with a fixed clock answers the same bytes every time; a target
// named n<digits> has exactly that many backlinks.
func Example() {
	s, err := sandbox.New(sandbox.Config{
		Now: func() time.Time { return time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+
		"/apis/v4/backlinks/v1/summary?url=n1000.example&scope=ROOT_DOMAIN&limit=3&format=csv", nil)
	req.Header.Set("Authorization", "Apikey "+sandbox.DefaultAPIKey)
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	fmt.Printf("%+v\n", s.Usage(sandbox.DefaultAPIKey))
	// Output:
	// score;backlinks_count;domains_count;follows_count;month_date
	// 34;1000;472;571;2025-06-01
	// 33;996;468;569;2025-05-01
	// 33;988;460;565;2025-04-01
	// {Key:sandbox UnitsSpent:120 Requests:1 FailedRequests:0}
}
