package jobspec

import (
	"go.yaml.in/yaml/v3"

	"github.com/seoetl/etl/auth"
	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/push"
)

// ListingSpec is the `listings:` section of a job: pull every location of
// an account, with its problems, into listing_versions and
// listing_problems (a listings task; see listings.go).
type ListingSpec struct {
	Line int
	// Account names the OAuth account (etl auth login --account NAME)
	// whose locations are pulled; default the job's account. It must be
	// signed in when the job runs, not when the spec is read.
	Account string
	// Size is the page size of Get locations; 0 (the default) pages at
	// the largest size the API accepts, probed and remembered (the spec
	// does not show the bound, 8.2). A size above the bound is lowered to
	// it, with a warning.
	Size int
	// Status says which locations are read one by one (Get location) for
	// their status, which pages do not carry (spec 4.5): StatusAll
	// (default) or StatusChanged.
	Status string
	// Push names a table or view of the desired locations ([schema.]name):
	// once the pull is done, what differs from it is pushed (package push,
	// as etl listings push --from does). "" pushes nothing.
	Push string
}

// Which locations a listings task reads one by one for their status.
const (
	// StatusAll reads every location: the status of each is as fresh as
	// the pull, at one request per location (10 a second).
	StatusAll = "all"
	// StatusChanged reads the locations that are new, changed since their
	// current version, back from gone, or whose known status is not
	// COMPLETE or not known; the others keep the status last read.
	StatusChanged = "changed"
)

var listingKeys = []string{"account", "size", "status", "push"}

// listings reads a job's `listings:` section; account is the job's own
// (the default), read before.
func (p *parser) listings(n *yaml.Node, jobAccount string) *ListingSpec {
	ls := &ListingSpec{Line: n.Line, Status: StatusAll}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		ls.Account = jobAccount
		if ls.Account == "" {
			p.errorf(n, "listings needs an account: listings: {account: NAME} (sign it in with etl auth login --account NAME), or the job's account:")
		}
		return ls
	}
	meant := map[string]bool{} // keys mistyped
	sizeParam, _ := catalog.GetLocations.Param("size")
	if !p.mapping(n, "listings", func(key string, k, v *yaml.Node) {
		switch key {
		case "account":
			ls.Account = p.str(v, "account")
			if err := auth.CheckName(ls.Account); err != nil {
				p.errorf(v, "listings: %v (sign it in with etl auth login --account NAME)", err)
			}
		case "size":
			ls.Size = p.integer(v, "size", sizeParam.Min, sizeParam.Max)
		case "status":
			switch s := p.str(v, "status"); s {
			case StatusAll, StatusChanged:
				ls.Status = s
			default:
				p.errorf(v, "listings status %s: want all (read every location's status, one request each) or changed (only new, changed or not COMPLETE locations)%s",
					Quote(s), didYouMean(s, []string{StatusAll, StatusChanged}))
			}
		case "push":
			ls.Push = p.str(v, "push")
			if ls.Push == "" {
				p.errorf(v, "listings push is empty: name the table or view of the desired locations, or leave the key out")
			} else if err := push.CheckRelation(ls.Push); err != nil {
				p.errorf(v, "listings push: %v", err)
			}
		default:
			p.unknown(meant, k, "unknown listings key %s%s (expected: %s)", listingKeys)
		}
	}) {
		return nil
	}
	if ls.Account == "" && !meant["account"] {
		ls.Account = jobAccount
		if ls.Account == "" {
			p.errorf(n, "listings needs an account: listings: {account: NAME} (sign it in with etl auth login --account NAME), or the job's account:")
		}
	}
	return ls
}

// ListingsEndpoint stands for the listing pull where a task names its
// endpoint (summaries, checkpoints, run_tables). It is not in the catalog:
// the listing operations are not Endpoints (catalog/listing.go).
var ListingsEndpoint = &catalog.Endpoint{
	Name:  "listings",
	Path:  catalog.LocationsPrefix,
	Table: "listing_versions",
	Price: catalog.Price{Units: 0, Per: catalog.PerRequest},
	Doc:   "every location of an account (Get locations, Get location), versioned, with its problems",
}
