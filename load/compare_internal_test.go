package load

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/internal/pgtest"
)

// TestCompareAndUpdateNeverRescanTheStagedRows: where the planner knows
// nothing of a month's partition (made and filled in the transaction,
// never analyzed), so that naming the page's owner makes it guess a row
// or two there, the compare probes the table once per staged row and
// the update reads each stored row of the owner once (probing the staged
// rows by their index): neither scans the staging table more than once (as a join on the owner, the compare
// scanned it once for every stored row: minutes for a page of 10,000).
func TestCompareAndUpdateNeverRescanTheStagedRows(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := t.Context()
	l, err := New(Config{Pool: pool})
	require.NoError(t, err)
	ep, _ := catalog.Lookup("links")
	month := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, l.EnsurePartitions(ctx, ep, []time.Time{month}))
	var id int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO targets (url, scope) VALUES ('a.example', 'ROOT_DOMAIN') RETURNING target_id`).Scan(&id))
	const stored, staged = 3000, 1000
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, page_score)
			SELECT $1, $2::date, $2::timestamptz, 'https://s' || g || '.example/', 'https://t/', 'a', '', 1 FROM generate_series(1, $3) g`, id, month, stored); err != nil {
			return err
		}
		for _, sql := range stageSQL(ep) {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		// Half the staged rows stored, every one of them changed.
		if _, err := tx.Exec(ctx, `INSERT INTO _stage_backlinks (target_id, month, observed_at, source_url, target_url, anchor, image_url, page_score, _ord)
			SELECT $1, $2::date, $2::timestamptz + interval '1 day', 'https://s' || (g + $3 / 2) || '.example/', 'https://t/', 'a', '', 2, g FROM generate_series(1, $3) g`, id, month, staged); err != nil {
			return err
		}
		sql := newMoveSQL(ep, false, month, month, pageOwner{cols: []string{colTargetID}, vals: []string{fmt.Sprint(id)}}, false)
		if _, err := tx.Exec(ctx, sql.index); err != nil {
			return err
		}
		for name, q := range map[string]string{"compare": sql.classify, "update": sql.update} {
			var doc []struct{ Plan explained }
			var plan []byte
			if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+q, pgx.QueryExecModeSimpleProtocol).Scan(&plan); err != nil {
				return err
			}
			require.NoError(t, json.Unmarshal(plan, &doc))
			loops := map[string]int64{}
			doc[0].Plan.loops(loops)
			require.LessOrEqual(t, loops["Seq Scan _stage_backlinks"], int64(1), "%s: the staging table is scanned once at most:\n%s", name, plan)
			if name == "compare" {
				var stage int64
				for scan, n := range loops {
					if strings.HasSuffix(scan, " _stage_backlinks") {
						stage += n
					}
				}
				require.Equal(t, int64(1), stage, "the compare reads the staged rows once:\n%s", plan)
				require.Equal(t, int64(staged), loops["Index Scan backlinks_p202611"], "and probes the table once per staged row:\n%s", plan)
			}
		}
		return nil
	}))
}

// explained is a node of EXPLAIN (ANALYZE, FORMAT JSON).
type explained struct {
	Type     string      `json:"Node Type"`
	Relation string      `json:"Relation Name"`
	Loops    int64       `json:"Actual Loops"`
	Plans    []explained `json:"Plans"`
}

// loops adds up, per kind of scan and relation ("Seq Scan backlinks"),
// the loops of the nodes that scan it.
func (e explained) loops(out map[string]int64) {
	if e.Relation != "" {
		out[e.Type+" "+e.Relation] += e.Loops
	}
	for _, p := range e.Plans {
		p.loops(out)
	}
}
