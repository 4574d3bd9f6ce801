package push

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/listing"
)

// Codes of an undo's KEPT items.
const (
	// CodeChangedSince keeps a location another writer changed since the
	// push undone: a later push, a later pull showing a version that
	// neither that push nor an undo of it wrote, or the location read
	// back before sending as neither. Its changes say what
	// changed (from what the push undone wrote to what is there now).
	CodeChangedSince = "CHANGED_SINCE"
	// CodeNoEarlierVersion keeps a location whose version from before the
	// push undone is not stored (it was never pulled before that push).
	CodeNoEarlierVersion = "NO_EARLIER_VERSION"
	// CodeGone keeps a location a later pull found gone, or the provider
	// answered not found when it was read back.
	CodeGone = "GONE"
)

// UndoOptions are the choices of an undo.
type UndoOptions struct {
	// Push is the push to undo (listing_pushes.push_id), of Config.Account.
	Push int64
	// Force sends the version from before Push also to the locations
	// another writer changed since; without it they are KEPT.
	Force bool
	// DryRun, Only (location ids among those Push updated) and Rounds are
	// a push's (Options).
	DryRun bool
	Only   []string
	Rounds int
}

// ErrNoSuchPush is returned by Undo for a push that is not one of the
// account's.
var ErrNoSuchPush = errors.New("no such push")

// ErrNothingToUndo is returned by Undo, before anything is recorded, for
// a push that updated no location (nor sent one whose outcome is in
// doubt): its error says what became of the push's locations.
var ErrNothingToUndo = errors.New("nothing to undo")

// Undo undoes push opts.Push of cfg.Account: for every location that push
// UPDATED, it sends the version the location had before (the base that
// push diffed against: the version a pull stored, or what an earlier push
// updated it to), as a push of its own, with the diff, the local checks,
// the rate limits, the records (listing_pushes.undoes names the push
// undone) and the outcomes of any push. A location changed since by
// another writer (a later push, or a later pull that shows a version
// neither the push undone nor an undo of it wrote, or that cfg.Client
// reads back as neither what the push wrote nor its earlier version) is
// left alone and recorded KEPT with what changed, unless opts.Force; so is one whose
// earlier version is not stored, or which is gone. Undoing again, or
// after an undo was killed, sends only what is not yet back: a location
// an undo of the same push restored is UNCHANGED. cfg.Relation is not
// read: the undo is recorded as the relation "undo of push N".
func Undo(ctx context.Context, cfg Config, opts UndoOptions) (*Summary, error) {
	if opts.Push <= 0 {
		return nil, fmt.Errorf("push: undo: a push id is a positive integer, got %d", opts.Push)
	}
	cfg.Relation = fmt.Sprintf("undo of push %d", opts.Push)
	src := &undoSource{account: cfg.Account, push: opts.Push, force: opts.Force, only: opts.Only}
	if cfg.Client != nil {
		src.lc = cfg.Client.Listings()
	}
	sum, err := run(ctx, cfg, Options{DryRun: opts.DryRun, Only: opts.Only, Rounds: opts.Rounds}, src)
	if sum != nil {
		sum.Undoes, sum.UndoneRelation = opts.Push, src.relation
	}
	return sum, err
}

// undoSource reads the versions from before a push.
type undoSource struct {
	account string
	push    int64
	force   bool
	only    []string
	// lc reads each location back before its earlier version is sent
	// (nil: a dry run without a client, which reads nothing).
	lc *extract.Listings
	// relation is the relation push was read from ("" when push is
	// itself an undo), once open has read it.
	relation string
}

func (u *undoSource) open(ctx context.Context, conn *pgxpool.Conn) error {
	var undoes *int64
	err := conn.QueryRow(ctx, `SELECT relation, undoes FROM listing_pushes WHERE push_id = $1 AND account = $2`, u.push, u.account).Scan(&u.relation, &undoes)
	if undoes != nil {
		u.relation = "" // an undo's relation names no relation of the user's
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("push: undo: %w %d of account %s (etl listings status --account %[3]s shows the last one)", ErrNoSuchPush, u.push, u.account)
	case err != nil:
		return fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
	}
	rows, err := conn.Query(ctx, `SELECT outcome, count(*) FROM listing_push_items WHERE push_id = $1 GROUP BY outcome ORDER BY 2 DESC, 1`, u.push)
	if err != nil {
		return fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
	}
	var counts []string
	sent := 0
	for rows.Next() {
		var outcome string
		var n int
		if err := rows.Scan(&outcome, &n); err != nil {
			rows.Close()
			return fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
		}
		if outcome == Updated || outcome == Sent {
			sent += n
		}
		counts = append(counts, fmt.Sprintf("%d %s", n, strings.ToLower(strings.ReplaceAll(outcome, "_", " "))))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
	}
	if sent == 0 {
		if len(counts) == 0 {
			counts = []string{"it had none"}
		}
		return fmt.Errorf("push %d of %s updated no location (%s): %w", u.push, u.account, strings.Join(counts, ", "), ErrNothingToUndo)
	}
	return nil
}

func (u *undoSource) record() (string, int64) {
	return fmt.Sprintf("undo of push %d", u.push), u.push
}

// written is a location's content as a push wrote it.
type written struct {
	push      int64
	content   listing.Location
	settledAt time.Time
}

func (u *undoSource) rows(ctx context.Context, conn *pgxpool.Conn, pulled map[string]pulled) ([]desired, []*Item, error) {
	targets, err := u.targets(ctx, conn)
	if err != nil {
		return nil, nil, err
	}
	ours, others, err := u.laterWrites(ctx, conn)
	if err != nil {
		return nil, nil, err
	}

	var out []desired
	var kept []*Item
	for _, t := range targets {
		before, ok, err := u.before(ctx, conn, t.id, t.baseHash)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			kept = append(kept, t.kept(pulled, CodeNoEarlierVersion, fmt.Sprintf("no version from before push %d is stored (it was not pulled before that push): nothing to go back to", u.push), nil, t.wrote.content))
			continue
		}
		it, err := u.keep(ctx, t, before, pulled, ours, others)
		if err != nil {
			return nil, nil, err
		}
		if it != nil {
			kept = append(kept, it)
			continue
		}
		before.ID = t.id
		out = append(out, desired{id: t.id, loc: before})
	}
	return out, kept, nil
}

// undoTarget is a location the push undone UPDATED, or sent and left in
// doubt: what it wrote and the base it diffed against.
type undoTarget struct {
	id       string
	wrote    written
	baseHash []byte
	inDoubt  bool
}

// targets reads the undo's targets, in the order of their ids: what the
// push undone UPDATED, or sent and left in doubt (SENT: an earlier push
// could not read it back, or, in a dry run, nothing has tried yet), of
// the --only ids if any. An item in doubt is a desired row like the
// others, so that the push reports it in doubt (its doubt is read before
// the rows) rather than leave it out of the undo without a word, push
// N's change perhaps still in place.
func (u *undoSource) targets(ctx context.Context, conn *pgxpool.Conn) ([]undoTarget, error) {
	var only []string
	if len(u.only) > 0 {
		only = u.only
	}
	rows, err := conn.Query(ctx, `
		SELECT location_id, content, base_hash, settled_at, outcome = 'SENT' FROM listing_push_items
		WHERE push_id = $1 AND account = $2 AND outcome IN ('UPDATED', 'SENT') AND ($3::text[] IS NULL OR location_id = ANY($3))
		ORDER BY location_id`, u.push, u.account, only)
	if err != nil {
		return nil, fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
	}
	var targets []undoTarget
	for rows.Next() {
		var t undoTarget
		var content []byte
		var settled *time.Time
		if err := rows.Scan(&t.id, &content, &t.baseHash, &settled, &t.inDoubt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
		}
		if err := json.Unmarshal(content, &t.wrote.content); err != nil {
			rows.Close()
			return nil, fmt.Errorf("push: undo: the content push %d sent to %s: %w", u.push, t.id, err)
		}
		t.wrote.push = u.push
		if settled != nil {
			t.wrote.settledAt = *settled
		}
		targets = append(targets, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("push: undo: reading push %d: %w", u.push, err)
	}
	return targets, nil
}

// kept is the KEPT item of t, with code, reason and changes, whose
// desired content is content; it is named as a pull last saw it, or
// else as the push undone wrote it.
func (t undoTarget) kept(pulled map[string]pulled, code, reason string, changes []listing.Change, content listing.Location) *Item {
	content.ID = t.id
	it := &Item{ID: t.id, Outcome: Kept, Code: code, Field: "id", Reason: reason, Changes: changes,
		desired: listing.UpdateItem(content), Name: t.wrote.content.LocationName, City: t.wrote.content.City}
	if cur, ok := pulled[t.id]; ok {
		it.Name, it.City = cur.loc.LocationName, cur.loc.City
	}
	if len(changes) > 0 {
		it.Field = changes[0].Field
	}
	it.hash = listing.ContentHash(content)
	return it
}

// keep returns the KEPT item of target t, whose version from before the
// push undone is before, or nil to send before: t is kept when a pull
// found it gone or, unless u.force, when another writer changed it since
// (a later push, others; a later pull that shows a version neither the
// push undone nor an undo of it, ours, wrote; or, read back now, the
// provider's location is neither what the push wrote nor before). A
// target in doubt is sent: the push reports its doubt.
func (u *undoSource) keep(ctx context.Context, t undoTarget, before listing.Location, pulled map[string]pulled, ours map[string][]written, others map[string]written) (*Item, error) {
	if t.inDoubt {
		// Whether push N applied it is not known: the push's doubt
		// says so, and nothing is sent until it is read back.
		return nil, nil
	}
	cur, known := pulled[t.id]
	if !known {
		return t.kept(pulled, CodeGone, fmt.Sprintf("a pull since push %d found it gone", u.push), nil, before), nil
	}
	if u.force {
		return nil, nil
	}
	// A later push that wrote what push N wrote (an undo of an
	// undo of it) changed nothing push N did.
	if w, ok := others[t.id]; ok && len(listing.Diff(t.wrote.content, w.content)) > 0 {
		changes := listing.Diff(t.wrote.content, w.content)
		return t.kept(pulled, CodeChangedSince, fmt.Sprintf("push %d changed it since push %d (%s): left as it is; --force sends the version from before push %d", w.push, u.push, fieldList(changes), u.push), changes, before), nil
	}
	if cur.validFrom.After(t.wrote.settledAt) && len(listing.Diff(t.wrote.content, cur.loc)) > 0 &&
		!slices.ContainsFunc(ours[t.id], func(w written) bool { return len(listing.Diff(w.content, cur.loc)) == 0 }) {
		changes := listing.Diff(t.wrote.content, cur.loc)
		return t.kept(pulled, CodeChangedSince, fmt.Sprintf("changed since push %d by another writer, as pulled at %s (%s): left as it is; --force sends the version from before push %d",
			u.push, cur.validFrom.UTC().Format(time.RFC3339), fieldList(changes), u.push), changes, before), nil
	}
	if u.lc == nil {
		return nil, nil
	}
	// What no pull has seen yet: another tool may have changed
	// it at the provider since. Reads are free (spec 8.1).
	now, found, err := u.readNow(ctx, t.id)
	if err != nil {
		return nil, err
	}
	if !found {
		return t.kept(pulled, CodeGone, "read back now, the provider has no such location", nil, before), nil
	}
	if !listing.Equal(now, t.wrote.content) && !listing.Equal(now, before) {
		changes := listing.Diff(t.wrote.content, now)
		return t.kept(pulled, CodeChangedSince, fmt.Sprintf("changed at the provider since push %d, as read back now (%s): left as it is; --force sends the version from before push %d",
			u.push, fieldList(changes), u.push), changes, before), nil
	}
	return nil, nil
}

// readNow reads location id at the provider (Get location). found is
// false when the provider has no such location.
func (u *undoSource) readNow(ctx context.Context, id string) (loc listing.Location, found bool, _ error) {
	resp, err := u.lc.Get(ctx, id)
	if err != nil {
		var le *extract.ListingError
		if errors.As(err, &le) && le.HasDetail(catalog.DetailLocationNotFound) {
			return loc, false, nil
		}
		return loc, false, fmt.Errorf("push: undo: reading location %s back before sending its version from before push %d (nothing was sent): %w", id, u.push, err)
	}
	defer resp.Body.Close()
	var body listing.LocationBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return loc, false, fmt.Errorf("push: undo: reading location %s back before sending its version from before push %d (nothing was sent): %w", id, u.push, err)
	}
	return body.Data, true, nil
}

// fieldList is "locationName, phone".
func fieldList(changes []listing.Change) string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.Field
	}
	if len(names) == 0 {
		return "no field of a request"
	}
	return strings.Join(names, ", ")
}

// laterWrites reads what pushes after the one undone UPDATED: ours, by
// an undo of it (every content, per location), and others', by any other
// push (the latest, per location).
func (u *undoSource) laterWrites(ctx context.Context, conn *pgxpool.Conn) (ours map[string][]written, others map[string]written, _ error) {
	rows, err := conn.Query(ctx, `
		SELECT i.location_id, i.push_id, p.undoes IS NOT DISTINCT FROM $1, i.content, i.settled_at
		FROM listing_push_items i JOIN listing_pushes p USING (push_id)
		WHERE i.account = $2 AND i.push_id > $1 AND i.outcome = 'UPDATED'
		ORDER BY i.push_id`, u.push, u.account)
	if err != nil {
		return nil, nil, fmt.Errorf("push: undo: reading the pushes since push %d: %w", u.push, err)
	}
	defer rows.Close()
	ours, others = map[string][]written{}, map[string]written{}
	for rows.Next() {
		var id string
		var w written
		var ourUndo bool
		var content []byte
		var settled *time.Time
		if err := rows.Scan(&id, &w.push, &ourUndo, &content, &settled); err != nil {
			return nil, nil, fmt.Errorf("push: undo: reading the pushes since push %d: %w", u.push, err)
		}
		if err := json.Unmarshal(content, &w.content); err != nil {
			return nil, nil, fmt.Errorf("push: undo: the content push %d sent to %s: %w", w.push, id, err)
		}
		if settled != nil {
			w.settledAt = *settled
		}
		if ourUndo {
			ours[id] = append(ours[id], w)
		} else {
			others[id] = w
		}
	}
	return ours, others, rows.Err()
}

// before returns the content of location id whose hash is baseHash: the
// base the push undone diffed against, as a pull stored it
// (listing_versions) or an earlier push updated it (listing_push_items).
// ok is false when neither holds it. The hash names the content (every
// request field and the country), so any version of that hash will do,
// whenever it was seen.
func (u *undoSource) before(ctx context.Context, conn *pgxpool.Conn, id string, baseHash []byte) (listing.Location, bool, error) {
	var loc listing.Location
	if baseHash == nil {
		return loc, false, nil
	}
	var hours, holidays *string
	l := &loc
	err := conn.QueryRow(ctx, `
		SELECT location_id, coalesce(location_name, ''), coalesce(city, ''), coalesce(address, ''),
			coalesce(additional_address_info, ''), coalesce(zip, ''), coalesce(phone, ''), coalesce(region, ''),
			coalesce(website_url, ''), coalesce(country_code, ''), business_hours::text, holiday_hours::text,
			coalesce(to_char(reopen_date, 'YYYY-MM-DD'), '')
		FROM listing_versions WHERE account = $1 AND location_id = $2 AND content_hash = $3
		ORDER BY valid_from DESC LIMIT 1`, u.account, id, baseHash).Scan(
		&l.ID, &l.LocationName, &l.City, &l.Address, &l.AdditionalAddressInfo, &l.Zip, &l.Phone,
		&l.Region, &l.WebsiteURL, &l.CountryCode, &hours, &holidays, &l.ReopenDate)
	switch {
	case err == nil:
		if hours != nil {
			if err := json.Unmarshal([]byte(*hours), &l.BusinessHours); err != nil {
				return loc, false, fmt.Errorf("push: undo: the stored version of %s: businessHours: %w", id, err)
			}
		}
		if holidays != nil {
			if err := json.Unmarshal([]byte(*holidays), &l.HolidayHours); err != nil {
				return loc, false, fmt.Errorf("push: undo: the stored version of %s: holidayHours: %w", id, err)
			}
		}
		return loc, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return loc, false, fmt.Errorf("push: undo: reading the versions of %s: %w", id, err)
	}
	var content []byte
	err = conn.QueryRow(ctx, `
		SELECT content FROM listing_push_items
		WHERE account = $1 AND location_id = $2 AND content_hash = $3 AND push_id < $4 AND outcome = 'UPDATED'
		ORDER BY push_id DESC LIMIT 1`, u.account, id, baseHash, u.push).Scan(&content)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return loc, false, nil
	case err != nil:
		return loc, false, fmt.Errorf("push: undo: reading the earlier pushes of %s: %w", id, err)
	}
	if err := json.Unmarshal(content, &loc); err != nil {
		return loc, false, fmt.Errorf("push: undo: the content an earlier push sent to %s: %w", id, err)
	}
	return loc, true, nil
}
