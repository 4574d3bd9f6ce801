package apitest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seoetl/etl/catalog"
)

// consistency checks that the endpoints of one target tell one story: the
// overview's counts are what the lists hold, the aggregates add up to the
// links, and the newest summary month and the comparison row are the
// overview.
func (s *suite) consistency(t *testing.T) {
	t.Parallel()
	ep := func(name string) *catalog.Endpoint {
		e, ok := catalog.Lookup(name)
		require.True(t, ok, name)
		return e
	}
	target := s.cfg.Target
	ov := s.json(t, ep("overview"), s.base(ep("overview"), target)).rows(t, ep("overview"))[0]
	count := func(field string) int64 { return num(ov[field]) }

	links, _ := s.all(t, ep("links"), s.base(ep("links"), target))
	require.Len(t, links, int(count("backlinks_count")), "links listed = overview backlinks_count")
	flags := map[string]string{
		"nofollows_count": "is_nofollow", "sponsored_count": "is_sponsored", "ugc_count": "is_ugc",
		"frames_count": "is_frame", "forms_count": "is_form", "images_count": "is_image", "lost_count": "is_lost",
	}
	for countField, flag := range flags {
		n := 0
		for _, l := range links {
			if l[flag] == true {
				n++
			}
		}
		require.Equal(t, count(countField), int64(n), "overview %s = links with %s", countField, flag)
	}
	require.Equal(t, count("backlinks_count"), count("follows_count")+count("nofollows_count"), "follows + nofollows = backlinks")
	require.Equal(t, count("backlinks_count"), count("texts_count")+count("images_count"), "texts + images = backlinks")
	domains, ips, pages := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, l := range links {
		domains[cell(l["source_domain"])] = true
		ips[cell(l["ip_address"])] = true
		pages[cell(l["source_url"])] = true
	}
	require.Equal(t, count("domains_count"), int64(len(domains)), "overview domains_count = distinct source domains of the links")
	require.Equal(t, count("ips_count"), int64(len(ips)), "overview ips_count = distinct IPs of the links")
	require.Equal(t, count("urls_count"), int64(len(pages)), "overview urls_count = distinct referring pages of the links")

	sum := func(rows []map[string]any, field string) int64 {
		var n int64
		for _, r := range rows {
			n += num(r[field])
		}
		return n
	}
	refDomains, _ := s.all(t, ep("ref-domains"), s.base(ep("ref-domains"), target))
	require.Len(t, refDomains, int(count("domains_count")), "ref-domains listed = overview domains_count")
	require.Equal(t, count("backlinks_count"), sum(refDomains, "backlinks_count"), "ref-domains backlinks add up to the backlinks")
	perDomain := map[string]int64{}
	for _, l := range links {
		perDomain[cell(l["source_domain"])]++
	}
	for _, d := range refDomains {
		require.Equal(t, perDomain[cell(d["domain"])], num(d["backlinks_count"]), "ref-domain %s: its backlinks = its links", d["domain"])
	}

	refIPs, _ := s.all(t, ep("ref-ips"), s.base(ep("ref-ips"), target))
	require.Len(t, refIPs, int(count("ips_count")), "ref-ips listed = overview ips_count")
	require.Equal(t, count("backlinks_count"), sum(refIPs, "backlinks_count"), "ref-ips backlinks add up to the backlinks")
	require.Equal(t, count("domains_count"), sum(refIPs, "domains_count"), "ref-ips domains add up to the domains")

	anchors, _ := s.all(t, ep("anchors"), s.base(ep("anchors"), target))
	require.Equal(t, count("backlinks_count"), sum(anchors, "backlinks_count"), "anchors add up to the backlinks")

	indexed, _ := s.all(t, ep("pages"), s.base(ep("pages"), target))
	require.Equal(t, count("backlinks_count"), sum(indexed, "backlinks_count"), "indexed pages' backlinks add up to the backlinks")

	profile, _ := s.all(t, ep("score-profile"), s.base(ep("score-profile"), target))
	require.LessOrEqual(t, len(profile), catalog.MaxScoreProfileRows)
	require.Equal(t, count("domains_count"), sum(profile, "domains_count"), "the score profile counts every referring domain")
	byScore := map[int64]int64{}
	for _, d := range refDomains {
		byScore[num(d["domain_score"])]++
	}
	for _, p := range profile {
		require.NotZero(t, num(p["domains_count"]), "the score profile omits scores without domains")
		require.Equal(t, byScore[num(p["domain_score"])], num(p["domains_count"]), "score %v: domains with that score", p["domain_score"])
	}

	summary, _ := s.all(t, ep("summary"), s.base(ep("summary"), target))
	require.NotEmpty(t, summary)
	newest := summary[0]
	for _, r := range summary {
		if cell(r["month_date"]) > cell(newest["month_date"]) {
			newest = r
		}
	}
	for _, f := range []string{"backlinks_count", "domains_count", "follows_count", "score"} {
		if newest[f] != nil {
			require.Equal(t, count(f), num(newest[f]), "the newest summary month's %s is the overview's", f)
		}
	}

	comparison, _ := s.all(t, ep("comparison"), s.base(ep("comparison"), target))
	require.Len(t, comparison, 2, "comparison: one row per url")
	for _, r := range comparison {
		if cell(r["url"]) == target {
			for _, f := range []string{"backlinks_count", "domains_count", "follows_count", "score"} {
				if r[f] != nil {
					require.Equal(t, count(f), num(r[f]), "the comparison row's %s is the overview's", f)
				}
			}
		}
	}

	matrix, _ := s.all(t, ep("matrix"), s.base(ep("matrix"), target))
	for _, r := range matrix {
		items, ok := r["backlinks_counts"].([]any)
		require.True(t, ok)
		require.Len(t, items, 2, "matrix: one count per requested url")
		nonZero := int64(0)
		for _, it := range items {
			if num(it) > 0 {
				nonZero++
			}
		}
		require.Equal(t, nonZero, num(r["matches_count"]), "matrix %s: matches_count = targets it links to", r["domain"])
		if n := num(items[0]); n > 0 {
			require.Equal(t, perDomain[cell(r["domain"])], n, "matrix %s: backlinks to the first url = its links", r["domain"])
		}
	}
}
