package load

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seoetl/etl/catalog"
)

// About names what a task's rows are about, as a job spec names it: a
// target (URL and Scope), a target set (Set, Scope and SetURLs), or the
// context values of an endpoint without owner (keyword metrics: keyword
// and country, in catalog order).
type About struct {
	URL     string
	Scope   catalog.Scope
	Set     string
	SetURLs []string
	Context []any
}

// Querier is a pool, a connection or a transaction.
type Querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}

// HoldsAbout reports whether ep's table holds rows about a in month (any
// month when month is zero, or when the rows say their own month: their
// month field, summary's and comparison's month_date). It creates nothing: a target or set the
// warehouse does not know holds no rows. It reads as the planner does,
// without a Loader: the month, when given, is a constant of the
// statement, so it reads that month's partition alone.
func HoldsAbout(ctx context.Context, q Querier, ep *catalog.Endpoint, a About, month time.Time) (bool, error) {
	table := pgx.Identifier{ep.Table}.Sanitize()
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	from := table + " f"
	switch owner(ep) {
	case colTargetID:
		from += " JOIN targets o ON o.target_id = f.target_id"
		if a.Set != "" {
			// A set's rows of one line per url (comparison): those of
			// its targets.
			where = append(where, "o.url = ANY("+arg(a.SetURLs)+")", "o.scope = "+arg(string(a.Scope)))
		} else {
			where = append(where, "o.url = "+arg(a.URL), "o.scope = "+arg(string(a.Scope)))
		}
	case colSetID:
		from += " JOIN target_sets o ON o.set_id = f.set_id"
		where = append(where, "o.name = "+arg(a.Set), "o.scope = "+arg(string(a.Scope)), "o.urls = "+arg(a.SetURLs))
	default:
		if len(a.Context) != len(ep.Context) {
			return false, fmt.Errorf("load %s: %d context values for %d context columns", ep.Table, len(a.Context), len(ep.Context))
		}
		for i, c := range ep.Context {
			where = append(where, "f."+pgx.Identifier{c.Name}.Sanitize()+" = "+arg(a.Context[i]))
		}
	}
	if !month.IsZero() && ep.MonthField == "" {
		// (Where the rows say their own month, the API's newest may lag
		// the request's: any month does.)
		where = append(where, "f."+colMonth+" = "+dateLiteral(MonthStart(month)))
	}
	// SELECT 1, not an empty target list: Citus 13.2.2 plans the join of
	// a distributed table with a reference table inside EXISTS with an
	// empty target list as a function returning record, and refuses it
	// ("a column definition list is required for functions returning
	// "record"").
	var holds bool
	err := q.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+from+" WHERE "+strings.Join(where, " AND ")+")", args...).Scan(&holds)
	if err != nil {
		return false, fmt.Errorf("load %s: does it hold rows of the task: %w", ep.Table, err)
	}
	return holds, nil
}
