package catalog_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// TestTokenService checks the token service's facts against sections 4.6,
// 5 and 8.5 of the spec.
func TestTokenService(t *testing.T) {
	t.Parallel()
	s := readSpec(t)
	paths := s.text(t, "4.6")
	for _, p := range []string{catalog.DeviceCodePath, catalog.DeviceTokenPath, catalog.AuthorizePath, catalog.AccessTokenPath} {
		require.Contains(t, paths, "`{auth_url}"+p+"`", "4.6 lists the token endpoints")
	}
	device := s.text(t, "5.3")
	require.Contains(t, device, "POST `{auth_url}"+catalog.DeviceCodePath+"`")
	require.Contains(t, device, "POST `{auth_url}"+catalog.DeviceTokenPath+"`")
	require.Contains(t, device, "value `"+catalog.GrantDeviceCode+"`")
	require.Contains(t, device, "`token_type` ("+catalog.TokenType+")")
	secs := func(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }
	require.Contains(t, device, "`expires_in` ("+secs(catalog.AccessTokenLifetime)+", that is 7 days)")
	require.Contains(t, device, "RFC 6749 section 5.2")

	code := s.text(t, "5.4")
	require.Contains(t, code, "`{auth_url}"+catalog.AuthorizePath+"`")
	require.Contains(t, code, "POST `{auth_url}"+catalog.AccessTokenPath+"`, content type `application/x-www-form-urlencoded` (not a JSON body)")
	require.Contains(t, code, "`grant_type="+catalog.GrantAuthorizationCode+"`")
	require.Contains(t, code, "`grant_type="+catalog.GrantRefreshToken+"`")
	require.Contains(t, code, "the sample uses `"+catalog.AuthorizeScope+"`")

	lifetimes := s.text(t, "8.5")
	require.Contains(t, lifetimes, "Access token "+secs(catalog.AccessTokenLifetime)+" seconds (7 days)")
	require.Equal(t, 7*24*time.Hour, catalog.AccessTokenLifetime)
	require.Contains(t, lifetimes, "refresh token 30 days")
	require.Equal(t, 30*24*time.Hour, catalog.RefreshTokenLifetime)
	require.Contains(t, lifetimes, "("+secs(catalog.DeviceCodeLifetime)+" seconds in the sample)")
	require.Contains(t, lifetimes, "("+secs(catalog.DevicePollInterval)+" seconds in the sample)")

	states := s.text(t, "3")
	require.Contains(t, states, "7 days (expires_in 604800 seconds) elapse")
	require.Contains(t, states, "30 days elapse without renewal")
}
