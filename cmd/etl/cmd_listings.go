package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/progress"
	"github.com/seoetl/etl/push"
)

type listingsOptions struct {
	databaseURL string
	apiURL      string
	account     string
	from        string
	dryRun      bool
	only        []string
	onlyGiven   bool // --only was given, perhaps empty
	json        bool
	undo        int64    // listings undo: the push to undo
	force       bool     // listings undo --force
	all         bool     // listings status --all
	states      []string // listings status --state
	location    string   // listings status --location
}

func newListingsCmd(e *env) *cobra.Command {
	var o listingsOptions
	cmd := &cobra.Command{
		Use:   "listings",
		Short: "Pull an account's locations, push their desired state (a reverse ETL), and see what is pending",
		Long: `Listings of an account are pulled into listings_current by a job (listings:
{account: NAME}) or by etl listings pull --account NAME. etl listings push
sends the changes a table or view of yours asks for: only the locations
that differ from what was pulled (or from what an earlier push updated
since), each checked first against every rule of spec 2.14, in bulk
requests and single updates under the rate limits of spec 8.2. What became of each location is in listing_push_items.

Environment:
  DATABASE_URL       the warehouse
  ETL_API_URL        the data API
  ETL_AUTH_URL       the token service, which renews the account's token
                     (default: ETL_API_URL)
  ETL_SECRET_KEY     the key of the accounts' tokens (etl auth)

` + exitLine(),
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	cmd.PersistentFlags().StringVar(&o.account, "account", "", "the account (required)")
	cmd.PersistentFlags().BoolVar(&o.json, "json", false, "print JSON")
	cmd.AddCommand(newListingsPullCmd(e, &o), newListingsPushCmd(e, &o), newListingsUndoCmd(e, &o), newListingsStatusCmd(e, &o))
	return cmd
}

// newListingsPushCmd is etl listings push.
func newListingsPushCmd(e *env, o *listingsOptions) *cobra.Command {
	pushCmd := &cobra.Command{
		Use:   "push --account NAME --from RELATION [--dry-run] [--only ID...] [--all]",
		Short: "Send what changed in RELATION to the account's locations",
		Long: `Read the desired locations from RELATION, a table or view ([schema.]name; a
name that needs quotes is written as in SQL: '"My Table"'), one row per
location id, with a column per request field of spec 2.14 named as the
spec spells it (id, locationName, ...) or in snake case (location_name,
...), in any case; the id may be location_id; businessHours and holidayHours are json,
jsonb or text holding JSON; a column account, if any, selects the account's
rows. Each location is diffed against the latest pulled version (or what
an earlier push updated since), refused locally when invalid (the field
and reason are recorded), and sent only when it changed; it is sent whole.

It prints its counts first, then what the locations that need a look came
to (failed, refused, waiting, in doubt, not sent, by code), then at most
ten of them; --all lists every location, the updated ones too.

--dry-run prints the requests and time the push will take, the fields it
changes, and the diff of each location it would send, field by field (the
first ten; --all: every one), and sends and records nothing.
--only limits the push to the ids given (repeat it, or separate by commas).

The push is safe to kill at any moment: the next push reads back what was
in doubt and never sends again a location already updated.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.onlyGiven = cmd.Flags().Changed("only")
			return e.listingsPush(cmd.Context(), cmd.OutOrStdout(), *o)
		},
	}
	pushCmd.Flags().StringVar(&o.from, "from", "", "the table or view of the desired locations (required)")
	pushCmd.Flags().StringVar(&o.apiURL, "api-url", "", "data API base address (default $ETL_API_URL)")
	pushCmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the diff and the plan; send nothing")
	pushCmd.Flags().StringSliceVar(&o.only, "only", nil, "push only these location ids")
	pushCmd.Flags().BoolVar(&o.all, "all", false, "list every location sent or to send, not only the ten that need a look")
	return pushCmd
}

// newListingsUndoCmd is etl listings undo.
func newListingsUndoCmd(e *env, o *listingsOptions) *cobra.Command {
	undoCmd := &cobra.Command{
		Use:   "undo --account NAME --push ID [--dry-run] [--only ID...] [--force] [--all]",
		Short: "Send back the versions the locations had before a push",
		Long: `Undo push ID of the account: for every location that push UPDATED, send the
version it had before (the one the push diffed against, as a pull stored it
or an earlier push updated it), as a new push with the same diff, checks,
rate limits, records and exit statuses as any push. etl listings status and
listing_pushes.undoes show which push undid which.

A location another writer changed since push ID is left alone and listed
KEPT with what changed: one a later push updated, one a later pull shows
with a version that push did not write, and one that, read back before
its earlier version is sent (reads are free), is no longer what push ID
left there (another tool changed it, and no pull has seen it yet).
--force sends them back too. Undoing again, or after an undo was killed,
sends only what is not back yet.

It prints as a push does: its counts first, then the locations that need
a look (kept, with what changed; failed; in doubt), at most ten; --all
lists every one.

--dry-run prints the diff of each location and the plan, and sends and
records nothing; it reads the locations back too when ETL_API_URL (or
--api-url) is set. --only limits the undo to the ids given. An undo that
sends nothing (every location back already, or kept) records nothing.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.onlyGiven = cmd.Flags().Changed("only")
			if !cmd.Flags().Changed("push") {
				return usageError(errors.New("--push ID is required: the push to undo (etl listings status --account NAME shows the last one)"))
			}
			if o.undo <= 0 {
				return usageError(fmt.Errorf("--push %d: a push id is a positive integer", o.undo))
			}
			return e.listingsPush(cmd.Context(), cmd.OutOrStdout(), *o)
		},
	}
	undoCmd.Flags().Int64Var(&o.undo, "push", 0, "the push to undo (required)")
	undoCmd.Flags().BoolVar(&o.force, "force", false, "send back also the locations another writer changed since")
	undoCmd.Flags().StringVar(&o.apiURL, "api-url", "", "data API base address (default $ETL_API_URL)")
	undoCmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the diff and the plan; send nothing")
	undoCmd.Flags().StringSliceVar(&o.only, "only", nil, "undo only for these location ids")
	undoCmd.Flags().BoolVar(&o.all, "all", false, "list every location sent or to send, not only the ten that need a look")
	return undoCmd
}

// newListingsStatusCmd is etl listings status.
func newListingsStatusCmd(e *env, o *listingsOptions) *cobra.Command {
	status := &cobra.Command{
		Use:   "status --account NAME [--all | --state STATE... | --location PATTERN]",
		Short: "Show the last push of an account and the locations waiting (failed, refused, in doubt)",
		Long: `Show the account's locations as pulled (counted by status), its last push,
and the locations whose latest outcome waits for something: in doubt (read
back by the next push), failed transiently (retried by the next push),
failed permanently or refused (each waits for a change of the desired row,
or of the location as pulled). Counts by state and by code come first,
then the ten that matter most (in doubt first, the longest waiting first);
--all lists every one, --state (in-doubt, failed, waiting, refused;
repeat it or separate by commas) and --location PATTERN (a glob with *
and ?, or any part, of the id, name or city, in any case) list those that
match. --json prints everything.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, st := range o.states {
				if !slices.Contains(pendingStates, st) {
					return usageError(fmt.Errorf("--state %s: a state is one of %s", jobspec.Quote(st), strings.Join(pendingStates, ", ")))
				}
			}
			return e.listingsStatus(cmd.Context(), cmd.OutOrStdout(), *o)
		},
	}
	status.Flags().BoolVar(&o.all, "all", false, "list every pending location")
	status.Flags().StringSliceVar(&o.states, "state", nil, "list the pending locations in these states: in-doubt, failed, waiting, refused")
	status.Flags().StringVar(&o.location, "location", "", "list the pending locations whose id, name or city matches PATTERN (* and ?, or any part)")
	return status
}

// listingsPush is etl listings push and etl listings undo (o.undo > 0):
// it runs the push, prints what became of it and ends as its outcome
// says.
func (e *env) listingsPush(ctx context.Context, out io.Writer, o listingsOptions) error {
	if err := o.checkPush(); err != nil {
		return err
	}
	dbURL, err := e.databaseURL(o.databaseURL)
	if err != nil {
		return err
	}
	// The push holds a connection for its account's lock, records on
	// another, and the account's token may be renewed on a third.
	pool, err := e.openPool(ctx, dbURL, push.MinConns+1)
	if err != nil {
		return err
	}
	defer pool.Close()
	cfg := push.Config{Pool: pool, Account: o.account, Relation: o.from, Logger: e.log}
	// An undo reads each location back before sending it (reads are
	// free), and so does its dry run when it knows the API.
	readsBack := o.undo > 0 && (o.apiURL != "" || e.getenv("ETL_API_URL") != "")
	if !o.dryRun || readsBack {
		apiURL, err := e.apiURL(o.apiURL)
		if err != nil {
			return err
		}
		client, err := e.accountClient(pool, apiURL)(o.account)
		if err != nil {
			return usageError(err)
		}
		cfg.Client = client
	}
	var prog *progress.Push
	if !o.dryRun {
		var done func()
		prog, done = e.pushProgress(o.account)
		defer done()
		cfg.Progress = prog.Update
	}
	var sum *push.Summary
	if o.undo > 0 {
		sum, err = push.Undo(ctx, cfg, push.UndoOptions{Push: o.undo, Force: o.force, DryRun: o.dryRun, Only: o.only})
	} else {
		sum, err = push.Run(ctx, cfg, push.Options{DryRun: o.dryRun, Only: o.only})
	}
	if err != nil && cfg.Client != nil && (sum == nil || sum.Sent == 0) {
		if mistake := cfg.Client.AddressMistake(err); mistake != "" {
			// A configuration mistake: nothing reached the API; one line,
			// as a run says it.
			if prog != nil {
				prog.Halt()
			}
			return errors.New(mistake)
		}
	}
	if prog != nil && sum != nil {
		prog.End(sum, err)
	}
	if sum == nil {
		if errors.Is(err, push.ErrNothingToUndo) {
			// Not a failure: the locations are as they were before it.
			if o.json {
				return writeJSON(out, map[string]any{"account": o.account, "undoes": o.undo, "nothing_to_undo": err.Error()})
			}
			fmt.Fprintln(out, err.Error())
			return nil
		}
		if errors.Is(err, push.ErrRelation) {
			return usageError(err)
		}
		// No such push fails as no such run does (exit 1).
		return err
	}
	if err := writePushResult(out, o, sum, cfg.Client != nil); err != nil {
		return err
	}
	return pushExit(ctx, o, sum, err)
}

// checkPush checks the flags of etl listings push and undo.
func (o listingsOptions) checkPush() error {
	if o.account == "" {
		return usageError(errors.New("--account NAME is required"))
	}
	if err := auth.CheckName(o.account); err != nil {
		return usageError(err)
	}
	if o.from == "" && o.undo == 0 {
		return usageError(errors.New("--from RELATION is required: the table or view of the desired locations"))
	}
	// An empty --only (--only "$IDS" with IDS empty) would read as no
	// --only at all: every location.
	if o.onlyGiven && len(o.only) == 0 || slices.ContainsFunc(o.only, func(id string) bool { return strings.TrimSpace(id) == "" }) {
		return usageError(fmt.Errorf("--only %q: an id is empty; give location ids, separated by commas or by repeating --only (leave --only out to push every row)",
			strings.Join(o.only, ",")))
	}
	return nil
}

// writePushResult prints the summary of a push (or undo) sum, with JSON
// as o says; readBack says whether an undo's dry run read the locations
// back.
func writePushResult(out io.Writer, o listingsOptions, sum *push.Summary, readBack bool) error {
	if o.json {
		return writeJSON(out, sum)
	}
	writePushSummary(out, sum, o.all)
	if o.undo > 0 && o.dryRun && !readBack {
		fmt.Fprintln(out, "note: no location was read back (no ETL_API_URL or --api-url): one another tool changed since the last pull is listed as to send, where the undo keeps it")
	}
	if sum.UndoneRelation != "" && sum.ToSend > 0 {
		// The trap after an undo: the next push of the relation (a
		// job's push step, tonight) sends it all again.
		fmt.Fprintf(out, "note: push %d was read from %s, which may still hold what it sent: the next push of %[2]s (etl listings push, or a job's push step) sends that again, unless %[2]s is fixed first\n",
			sum.Undoes, plainText(sum.UndoneRelation))
	}
	return nil
}

// pushExit is how a push (or undo) sum that ended with err ends etl: an
// interrupted one, or one that left locations pending, with exitPartial.
func pushExit(ctx context.Context, o listingsOptions, sum *push.Summary, err error) error {
	if ctx.Err() != nil && !sum.DryRun {
		// Interrupted (SIGINT, SIGTERM): the request in flight finished,
		// the rest waits for the next push.
		verb := "push"
		if o.undo > 0 {
			verb = "undo"
		}
		return &exitError{code: exitPartial, err: fmt.Errorf("listings %s %d of %s interrupted: %d updated, %d failed, %d in doubt (read back by the next push), %d not sent; %[1]s again to finish",
			verb, sum.PushID, o.account, sum.Updated, sum.Failed, sum.InDoubt, sum.NotSent)}
	}
	if err != nil {
		return err
	}
	if sum.Partial() {
		if o.undo > 0 {
			// Status does not list what an undo kept: the lines above do.
			which := ""
			if sum.PushID > 0 {
				which = fmt.Sprintf(" (push %d)", sum.PushID)
			}
			return &exitError{code: exitPartial, err: fmt.Errorf("listings undo of push %d of %s%s: %s (the lines above list them; etl listings status --account %[2]s lists what stays pending)",
				o.undo, o.account, which, sum.Undone())}
		}
		return &exitError{code: exitPartial, err: fmt.Errorf("listings push of %s: %s (etl listings status --account %[1]s lists them)",
			o.account, sum.Undone())}
	}
	return nil
}

// writePushSummary prints a push (or a dry run), summaries first: the
// counts and the plan, what the locations that need a look came to (by
// outcome and code), then those locations (kept, in doubt, failed,
// waiting, refused, not sent), at most statusShown of them, and, in a
// dry run, the locations it would send with their diffs, at most
// statusShown too. all (--all) lists every location that is not
// unchanged, the updated ones too.
func writePushSummary(w io.Writer, s *push.Summary, all bool) {
	if s.DryRun {
		fmt.Fprintf(w, "dry run of %s from %s: %d rows, %d to send, %d unchanged, %d refused, %d waiting, %d in doubt%s\n",
			s.Account, plainText(s.Relation), s.Rows, s.ToSend, s.Unchanged, s.Refused, s.Waiting, s.InDoubt, keptText(s.Kept))
		fmt.Fprintf(w, "plan: %d requests, %s (%.1f minutes)\n%s\n",
			s.PlannedRequests, lastRequest(s), s.PlannedDuration.Minutes(), plainLines(s.PlanText))
		if fields := changedFields(s.Items); fields != "" {
			fmt.Fprintf(w, "to change: %s\n", fields)
		}
	} else {
		head := fmt.Sprintf("push %d of %s from %s", s.PushID, s.Account, plainText(s.Relation))
		if s.PushID == 0 {
			head = fmt.Sprintf("undo of push %d of %s sent nothing (not recorded)", s.Undoes, s.Account)
		}
		fmt.Fprintf(w, "%s: %d rows; sent %d, updated %d, failed %d, refused %d, unchanged %d, waiting %d, in doubt %d, not sent %d%s\n",
			head, s.Rows, s.Sent, s.Updated, s.Failed, s.Refused, s.Unchanged, s.Waiting, s.InDoubt, s.NotSent, keptText(s.Kept))
		fmt.Fprintf(w, "requests: %d bulk, %d single, %d read back, %d answered 429 (planned %d, %s)\n",
			s.BulkRequests, s.SingleRequests, s.ReadBacks, s.TooMany, s.PlannedRequests, lastRequest(s))
		if s.Settled > 0 {
			fmt.Fprintf(w, "settled %d items of earlier pushes left in doubt\n", s.Settled)
		}
	}

	// The locations that need a look, the most urgent first; then the
	// ones a dry run would send; then the updated ones.
	var look, planned, updated []push.Item
	for _, it := range s.Items {
		switch it.Outcome {
		case push.Unchanged:
		case push.Planned:
			planned = append(planned, it)
		case push.Updated:
			updated = append(updated, it)
		default:
			look = append(look, it)
		}
	}
	slices.SortStableFunc(look, func(a, b push.Item) int { return lookRank[a.Outcome] - lookRank[b.Outcome] })
	for _, outcome := range lookOrder {
		if line := codeCounts(look, outcome); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	more := ""
	if !s.DryRun && len(updated) > 0 {
		more = fmt.Sprintf(" (and the %d updated)", len(updated))
	}
	if !all && len(look) > statusShown {
		fmt.Fprintf(w, "the %d that need a look of %d; --all lists every one%s\n", statusShown, len(look), more)
		look = look[:statusShown]
	} else if !all && more != "" {
		fmt.Fprintf(w, "--all lists the %d updated\n", len(updated))
	}
	for _, it := range look {
		writePushItem(w, s, it)
	}
	if s.DryRun {
		if !all && len(planned) > statusShown {
			fmt.Fprintf(w, "the first %d of the %d to send; --all lists every one:\n", statusShown, len(planned))
			planned = planned[:statusShown]
		}
		for _, it := range planned {
			writePushItem(w, s, it)
		}
	}
	if all {
		for _, it := range updated {
			writePushItem(w, s, it)
		}
	}
}

// lookOrder are the outcomes of the locations that need a look, the most
// urgent first: in doubt (read back by the next push), failed, kept,
// waiting for a change, refused, not sent.
var lookOrder = []string{push.Sent, push.Failed, push.Kept, push.Waiting, push.Refused, push.NotSent}

var lookRank = func() map[string]int {
	m := map[string]int{}
	for i, o := range lookOrder {
		m[o] = i
	}
	return m
}()

// lookWords names an outcome in a count.
var lookWords = map[string]string{
	push.Sent: "in doubt", push.Failed: "failed", push.Kept: "kept",
	push.Waiting: "waiting for a change", push.Refused: "refused", push.NotSent: "not sent",
}

// codeCounts is "12 kept: 12 CHANGED_SINCE (phone)" of the items of
// outcome among items, the five commonest codes; "" when none.
func codeCounts(items []push.Item, outcome string) string {
	n := 0
	byCode := map[string]int{}
	for _, it := range items {
		if it.Outcome != outcome {
			continue
		}
		n++
		code := it.Code
		if it.Field != "" {
			code += " (" + it.Field + ")"
		}
		if code != "" {
			byCode[code]++
		}
	}
	if n == 0 {
		return ""
	}
	line := fmt.Sprintf("%d %s", n, lookWords[outcome])
	if top := topCounts(byCode, 5); top != "" {
		line += ": " + top
	}
	return line
}

// topCounts is "3 locationName, 1 phone": the n commonest keys of counts
// (each quoted as plainText), and how many others there are.
func topCounts(counts map[string]int, n int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if counts[a] != counts[b] {
			return counts[b] - counts[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys[:min(len(keys), n)] {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], plainText(k)))
	}
	if len(keys) > n {
		parts = append(parts, fmt.Sprintf("and %d others", len(keys)-n))
	}
	return strings.Join(parts, ", ")
}

// changedFields counts, over the items a dry run would send, the
// locations each field changes in: "120 locationName, 3 city".
func changedFields(items []push.Item) string {
	counts := map[string]int{}
	for _, it := range items {
		if it.Outcome != push.Planned {
			continue
		}
		for _, c := range it.Changes {
			counts[c.Field]++
		}
	}
	return topCounts(counts, len(counts))
}

// writePushItem prints one location of a push: its id, name and city,
// what became of it and why, and, in a dry run or when kept, the diff.
func writePushItem(w io.Writer, s *push.Summary, it push.Item) {
	if it.Outcome == push.Planned {
		fmt.Fprintf(w, "%s: would send (%s)\n", locationLabel(it.ID, it.Name, it.City), it.Request)
	} else {
		line := fmt.Sprintf("%s: %s", locationLabel(it.ID, it.Name, it.City), it.Outcome)
		var why []string
		for _, part := range []string{it.Code, it.Detail, it.Field} {
			if part != "" {
				why = append(why, plainText(part))
			}
		}
		if len(why) > 0 {
			line += " " + strings.Join(why, " ")
		}
		if it.Reason != "" && it.Outcome != push.Updated {
			line += ": " + plainText(it.Reason)
		}
		fmt.Fprintln(w, line)
	}
	if s.DryRun || it.Outcome == push.Kept {
		for _, c := range it.Changes {
			fmt.Fprintf(w, "  %s: %s -> %s\n", plainText(c.Field), quoteEmpty(c.From), quoteEmpty(c.To))
		}
	}
}

// keptText is ", 2 kept" when an undo kept locations, "" else.
func keptText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", %d kept", n)
}

// lastRequest says when the plan of s sends its last request: "the last
// at once", or "the last 1m3.2s after the start". The plan counts the
// requests earlier pushes sent in the last minute, which may hold its
// first ones back.
func lastRequest(s *push.Summary) string {
	switch {
	case s.PlannedRequests == 0:
		return "none to send"
	case s.PlannedDuration == 0:
		return "the last at once"
	}
	return "the last " + s.PlannedDuration.Round(100*time.Millisecond).String() + " after the start"
}

// quoteEmpty shows a value of a diff: as it is, "" when empty, quoted
// (jobspec.Quote) when it holds what is not graphic (a newline, an escape
// sequence, a right-to-left override) or is not UTF-8, so that it cannot
// reach the terminal, and cut past maxShown bytes (plainText).
func quoteEmpty(s string) string {
	switch {
	case s == "":
		return `""`
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) }):
		return jobspec.Quote(s)
	}
	return plainText(s)
}

func (e *env) listingsStatus(ctx context.Context, out io.Writer, o listingsOptions) error {
	if o.account == "" {
		return usageError(errors.New("--account NAME is required"))
	}
	pool, err := e.connect(ctx, o.databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep, err := push.Status(ctx, pool, o.account)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(out, rep)
	}
	if pc := rep.Pulled; pc.Locations > 0 {
		statuses := make([]string, 0, len(pc.ByStatus))
		for st := range pc.ByStatus {
			statuses = append(statuses, st)
		}
		slices.SortFunc(statuses, func(a, b string) int {
			if pc.ByStatus[a] != pc.ByStatus[b] {
				return pc.ByStatus[b] - pc.ByStatus[a]
			}
			return strings.Compare(a, b)
		})
		var parts []string
		for _, st := range statuses {
			name := st
			if name == "" {
				name = "status unknown"
			}
			parts = append(parts, fmt.Sprintf("%d %s", pc.ByStatus[st], plainText(name)))
		}
		gone := ""
		if pc.Gone > 0 {
			gone = fmt.Sprintf("; %d gone", pc.Gone)
		}
		fmt.Fprintf(out, "%d locations of %s pulled: %s%s\n", pc.Locations, o.account, strings.Join(parts, ", "), gone)
	}
	if rep.Last == nil {
		fmt.Fprintf(out, "no push of account %s yet\n", o.account)
		return nil
	}
	l := rep.Last
	fmt.Fprintf(out, "last push %d of %s from %s, started %s: %s; sent %d, updated %d, failed %d, refused %d, unchanged %d, waiting %d%s\n",
		l.PushID, o.account, plainText(l.Relation), l.Started.UTC().Format(time.RFC3339), l.Status, l.Sent, l.Updated, l.Failed, l.Refused, l.Unchanged, l.Waiting, keptText(l.Kept))
	if l.Undoes != nil {
		fmt.Fprintf(out, "push %d undoes push %d\n", l.PushID, *l.Undoes)
	}
	if len(l.UndoneBy) > 0 {
		fmt.Fprintf(out, "push %d is undone by push %s\n", l.PushID, joinIDs(l.UndoneBy))
	}
	if l.Error != "" {
		fmt.Fprintf(out, "error: %s\n", plainText(l.Error))
	}
	writePending(out, rep.Pending, o)
	return nil
}

// statusShown is how many pending locations status lists without
// --all, --state or --location: the few that matter.
const statusShown = 10

// pendingState is the state of a pending location as --state names it:
// in-doubt, failed (transiently: the next push retries it), waiting
// (failed permanently, waits for a change) or refused.
func pendingState(p push.Pending) string {
	switch {
	case p.Outcome == push.Sent:
		return "in-doubt"
	case p.Outcome == push.Failed && p.Transient:
		return "failed"
	case p.Outcome == push.Refused:
		return "refused"
	}
	return "waiting"
}

// pendingStates are the states in the order they matter: what the next
// push settles by itself first, then what waits for a change.
var pendingStates = []string{"in-doubt", "failed", "waiting", "refused"}

// pendingWords says what each state waits for.
var pendingWords = map[string]string{
	"in-doubt": "in doubt (read back by the next push)",
	"failed":   "failed (retried by the next push)",
	"waiting":  "failed permanently (wait for a change)",
	"refused":  "refused (wait for a change)",
}

// matchLocation reports whether the pending location p matches pattern:
// a glob, where * stands for any characters (a / too) and ? for one,
// matched against its id, name and city, in any case; without * or ?,
// any part of one of them. Every other character stands for itself: a
// name with brackets ("Café [Nord]") is no character class, and no
// pattern is malformed (path.Match, which this was, read [ as a class,
// matched nothing on a malformed one without a word, and stopped * at a
// /).
func matchLocation(p push.Pending, pattern string) bool {
	var re *regexp.Regexp
	if strings.ContainsAny(pattern, "*?") {
		var b strings.Builder
		b.WriteString(`(?is)\A`)
		for _, r := range pattern {
			switch r {
			case '*':
				b.WriteString(".*")
			case '?':
				b.WriteString(".")
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString(`\z`)
		re = regexp.MustCompile(b.String())
	}
	for _, v := range []string{p.LocationID, p.Name, p.City} {
		if re != nil {
			if re.MatchString(v) {
				return true
			}
		} else if strings.Contains(strings.ToLower(v), strings.ToLower(pattern)) {
			return true
		}
	}
	return false
}

// writePending prints the pending locations: the counts by state and by
// code first, then the few that matter (at most statusShown: in doubt
// first, then failed, waiting and refused, each the longest waiting
// first), or, on request, every one (--all) or those of --state and
// --location.
func writePending(out io.Writer, pending []push.Pending, o listingsOptions) {
	if len(pending) == 0 {
		fmt.Fprintln(out, "nothing pending")
		return
	}
	byState := map[string]int{}
	byCode := map[string]int{}
	for _, p := range pending {
		byState[pendingState(p)]++
		code := p.Code
		if p.Field != "" {
			code += " (" + p.Field + ")"
		}
		if code != "" {
			byCode[code]++
		}
	}
	var parts []string
	for _, st := range pendingStates {
		if n := byState[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, pendingWords[st]))
		}
	}
	fmt.Fprintf(out, "%d locations pending: %s\n", len(pending), strings.Join(parts, ", "))
	codes := make([]string, 0, len(byCode))
	for c := range byCode {
		codes = append(codes, c)
	}
	slices.SortFunc(codes, func(a, b string) int {
		if byCode[a] != byCode[b] {
			return byCode[b] - byCode[a]
		}
		return strings.Compare(a, b)
	})
	if len(codes) > 0 {
		var top []string
		for _, c := range codes[:min(len(codes), 5)] {
			top = append(top, fmt.Sprintf("%d %s", byCode[c], plainText(c)))
		}
		more := ""
		if len(codes) > 5 {
			more = fmt.Sprintf(", and %d other codes", len(codes)-5)
		}
		fmt.Fprintf(out, "by code: %s%s\n", strings.Join(top, ", "), more)
	}

	rank := map[string]int{}
	for i, st := range pendingStates {
		rank[st] = i
	}
	shown := slices.Clone(pending)
	slices.SortStableFunc(shown, func(a, b push.Pending) int {
		if d := rank[pendingState(a)] - rank[pendingState(b)]; d != 0 {
			return d
		}
		return a.Since.Compare(b.Since)
	})
	filtered := len(o.states) > 0 || o.location != ""
	if filtered {
		shown = slices.DeleteFunc(shown, func(p push.Pending) bool {
			return len(o.states) > 0 && !slices.Contains(o.states, pendingState(p)) || o.location != "" && !matchLocation(p, o.location)
		})
	}
	switch {
	case filtered || o.all || len(shown) <= statusShown:
		if filtered {
			fmt.Fprintf(out, "%d of them match:\n", len(shown))
		}
	default:
		fmt.Fprintf(out, "the %d that matter most (in doubt, then failed, waiting and refused; the longest waiting first); --all lists all %d, --state %s and --location PATTERN choose:\n",
			statusShown, len(shown), strings.Join(pendingStates, "|"))
		shown = shown[:statusShown]
	}
	for _, p := range shown {
		what := p.Outcome
		switch {
		case p.Outcome == push.Failed && p.Transient:
			what += " (retried by the next push)"
		case p.Outcome == push.Sent:
			what += " (in doubt: read back by the next push)"
		case p.Outcome != push.Sent:
			what += " (waits for a change)"
		}
		fmt.Fprintf(out, "  %s  push %d  %s  %s %s %s  %s\n", locationLabel(p.LocationID, p.Name, p.City), p.PushID, what, plainText(p.Code), plainText(p.Detail), plainText(p.Field), plainText(p.Reason))
	}
}

// joinIDs is "7", "7 and 9", "7, 9 and 12".
func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprint(id)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
