package sandbox_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"time"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/sandbox"
)

// A device flow that runs unattended: with DeviceAutoApprove 1 the first
// poll of a device code answers the tokens, for the first API key, and its
// access token is a bearer token of the data API that spends that key's
// units.
func Example_deviceFlow() {
	s, err := sandbox.New(sandbox.Config{
		Now:               func() time.Time { return time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC) },
		DeviceAutoApprove: 1,
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func(path string, form url.Values, v any) int {
		resp, err := srv.Client().Post(srv.URL+path, "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			panic(err)
		}
		return resp.StatusCode
	}

	var code struct {
		DeviceCode      string `json:"device_code"`
		VerificationURI string `json:"verification_uri"`
		ExpiresIn       int    `json:"expires_in"`
		Interval        int    `json:"interval"`
	}
	post(catalog.DeviceCodePath, url.Values{"scope": {"user.id"}}, &code)
	fmt.Println(strings.TrimPrefix(code.VerificationURI, srv.URL), code.ExpiresIn, code.Interval)

	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	status := post(catalog.DeviceTokenPath, url.Values{"grant_type": {catalog.GrantDeviceCode}, "device_code": {code.DeviceCode}}, &tok)
	fmt.Println(status, tok.TokenType, tok.ExpiresIn)

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/apis/v4/keywords/v1/metrics?keyword=seo+tools&country=US", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)
	fmt.Printf("%+v\n", s.Usage(sandbox.DefaultAPIKey))
	// Output:
	// /dag/device 300 5
	// 200 Bearer 604800
	// 200
	// {Key:sandbox UnitsSpent:20 Requests:1 FailedRequests:0}
}
