package sandbox

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBearerAccount checks every answer of bearerAccount, the check the
// listing endpoints use too.
func TestBearerAccount(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 6, 15, 13, 4, 5, 0, time.UTC)
	s, err := New(Config{Now: func() time.Time { return now }, APIKeys: []string{"key-one", "key-two"}})
	require.NoError(t, err)
	one, err := s.IssueToken("key-one")
	require.NoError(t, err)
	two, err := s.IssueToken("key-two")
	require.NoError(t, err)
	at := func(authorization string, c clock) (string, string) {
		r := httptest.NewRequest(http.MethodGet, "/apis/v4/listing-management/v1/external/locations", nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		return s.bearerAccount(r, c)
	}
	c := newClock(now)
	for _, tc := range []struct {
		name, header, account, reason string
	}{
		{"no header", "", "", "no credentials: send Authorization: Bearer TOKEN"},
		{"an API key", "Apikey key-one", "", "the Authorization header must read Bearer TOKEN"},
		{"no token", "Bearer", "", "no token after Bearer"},
		{"unknown token", "Bearer sbx-at-X", "", "the access token is not valid"},
		{"a refresh token", "Bearer " + one.RefreshToken, "", "the access token is not valid"},
		{"first account", "Bearer " + one.AccessToken, "key-one", ""},
		{"second account, spaces and case", "  bearer   " + two.AccessToken + " ", "key-two", ""},
	} {
		account, reason := at(tc.header, c)
		require.Equal(t, tc.account, account, tc.name)
		require.Contains(t, reason, tc.reason, tc.name)
		if tc.account != "" {
			require.Empty(t, reason, tc.name)
		}
	}
	account, _ := at("Bearer "+one.AccessToken, newClock(now.Add(7*24*time.Hour-time.Second)))
	require.Equal(t, "key-one", account)
	account, reason := at("Bearer "+one.AccessToken, newClock(now.Add(7*24*time.Hour)))
	require.Empty(t, account)
	require.Contains(t, reason, "expired at 2025-06-22T13:04:05Z")
}
