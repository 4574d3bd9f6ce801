package push_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/push"
)

// TestPushRetriesA5xxAndA429WithBackoff: the first bulk request is
// answered 503 without being applied, the second 429 at each of its
// attempts (two: the client's MaxAttempts). The first's locations are
// read back and found not applied; both requests' locations are failed
// transiently and sent again in a second round, after a back-off; every
// location ends UPDATED, updated once by the sandbox, and the requests
// are recorded with their attempts.
func TestPushRetriesA5xxAndA429WithBackoff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "x-n120")
	f.pull(t)
	f.desiredFromPulled(t, "desired")
	ctx := t.Context()
	// A hundred COMPLETE locations: two bulk requests.
	_, err := f.pool.Exec(ctx, `DELETE FROM desired WHERE id NOT IN (SELECT location_id FROM listings_current
		WHERE account = $1 AND status = 'COMPLETE' ORDER BY 1 LIMIT 100)`, f.account)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `UPDATE desired SET location_name = 'Retried ' || id`)
	require.NoError(t, err)
	var puts int
	f.mw = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/locations") {
				next.ServeHTTP(w, r)
				return
			}
			puts++
			switch puts {
			case 1:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"code": 503, "message": "overloaded"}`)
			case 2, 3:
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, `{"code": 429, "message": "slow down"}`)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
	const backoff = time.Second
	client := f.newClient(t, extract.Config{Backoff: backoff, MaxAttempts: 2})
	f.wall.Sleep(ctx, time.Second) // the pull's reads leave the window of the new client's
	sum, err := push.Run(ctx, push.Config{Pool: f.pool, Client: client, Account: f.account, Relation: "desired", Now: f.wall.Now}, push.Options{})
	require.NoError(t, err)
	require.Equal(t, 2, sum.TooMany)
	require.Equal(t, 4, sum.BulkRequests, "two, then both again")
	require.Positive(t, sum.ReadBacks, "the 503's locations read back")
	require.Zero(t, sum.Failed+sum.InDoubt+sum.NotSent, "%+v", sum)
	require.Equal(t, 100, sum.ToSend)
	require.Equal(t, sum.ToSend, sum.Updated)

	log := f.sentLog()
	require.Len(t, log, 5)
	require.Equal(t, http.StatusServiceUnavailable, log[0].status)
	require.Equal(t, http.StatusTooManyRequests, log[1].status)
	require.Equal(t, http.StatusTooManyRequests, log[2].status)
	require.GreaterOrEqual(t, log[2].at.Sub(log[1].at), backoff/2, "the client backs off before its second attempt")
	require.GreaterOrEqual(t, log[3].at.Sub(log[2].at), backoff/2, "the second round backs off too")
	updated := map[string]int{}
	for _, s := range log[3:] {
		require.Equal(t, http.StatusOK, s.status)
		require.Empty(t, s.failed)
		for _, id := range s.ids {
			updated[id]++
		}
	}
	require.Len(t, updated, sum.Updated)
	for id, n := range updated {
		require.Equal(t, 1, n, "%s updated %d times", id, n)
	}

	type row struct {
		no, attempts int
		retried      bool
	}
	rows, err := f.pool.Query(ctx, `SELECT request_no, attempts, answered_at > sent_at FROM listing_push_requests WHERE push_id = $1 ORDER BY 1`, sum.PushID)
	require.NoError(t, err)
	var got []row
	for rows.Next() {
		var r row
		require.NoError(t, rows.Scan(&r.no, &r.attempts, &r.retried))
		got = append(got, r)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []row{{1, 1, true}, {2, 2, true}, {3, 1, false}, {4, 1, false}}, got,
		"the 503 was answered after its read-backs, the 429s after the back-off")
	var twice int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM listing_push_items WHERE push_id = $1 AND attempts = 2`, sum.PushID).Scan(&twice))
	require.Equal(t, sum.Updated, twice, "each location in two requests")
}
