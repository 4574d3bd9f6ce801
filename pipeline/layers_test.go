package pipeline_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// layers are the module's packages from the bottom up: a package imports
// only packages of its own layer or below it, so the data flow reads from
// the folders (jobspec, then planning, then pipeline, then what drives
// it). Go refuses an import cycle by itself; this keeps the direction.
var layers = [][]string{
	// facts and small tools, importing nothing of ours but each other
	{"catalog", "money", "migrations", "internal/plain", "internal/redact", "internal/suggest", "internal/atomicfile",
		"internal/vt", "internal/pgcluster", "internal/spool"},
	// the API's models
	{"listing", "filter"},
	// the stages, the sandbox and the test harness
	{"transform", "extract", "budget", "load", "auth", "push", "export", "report", "internal/dbconn", "internal/apibound",
		"internal/pgtest", "internal/citusrun", "internal/apitest", "sandbox", "sandbox/oauth", "sandbox/locations"},
	// what jobs.yaml says
	{"jobspec"},
	// the run's machinery
	{"internal/runs", "internal/failover"},
	// what a run would cost
	{"planning"},
	// the runner
	{"pipeline"},
	// what drives and shows runs
	{"schedule", "progress", "internal/localwh"},
	// commands
	{"cmd/etl", "bench", "internal/testworld"},
}

const module = "github.com/seoetl/etl/"

// goPackages are the folders of the module with Go files other than
// tests, by path from the repository's root.
func goPackages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(out, rel) {
			out = append(out, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestNoPackageImportsAHigherLayer: every package is in a layer, and
// imports no package of a layer above its own.
func TestNoPackageImportsAHigherLayer(t *testing.T) {
	t.Parallel()
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layerOf[p] = i
		}
	}
	for _, pkg := range goPackages(t) {
		own, ok := layerOf[pkg]
		if !ok {
			t.Errorf("%s is in no layer: add it to layers (pipeline/layers_test.go) and to docs/how-it-works.md's table", pkg)
			continue
		}
		files, err := filepath.Glob(filepath.Join(repoRoot, pkg, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range parsed.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				dep, ok := strings.CutPrefix(path, module)
				if !ok {
					continue
				}
				if l, ok := layerOf[dep]; ok && l > own {
					t.Errorf("%s imports %s, a layer above it", filepath.ToSlash(f[len(repoRoot)+1:]), dep)
				}
			}
		}
	}
}

// TestHowItWorksNamesEveryFolder: the package table of
// docs/how-it-works.md names every folder of Go code, and only folders
// that exist.
func TestHowItWorksNamesEveryFolder(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "how-it-works.md"))
	require.NoError(t, err)
	named := map[string]bool{}
	cell := regexp.MustCompile("`([a-z/]+?)/?`")
	_, table, ok := strings.Cut(string(b), "| folder | owns |\n")
	require.True(t, ok, "docs/how-it-works.md has no table of folders")
	table, _, _ = strings.Cut(table, "\n\n")
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first := strings.Split(l, "|")[1]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			named[m[1]] = true
		}
	}
	pkgs := goPackages(t)
	for _, p := range pkgs {
		require.True(t, named[p], "docs/how-it-works.md's table does not name %s/", p)
	}
	for n := range named {
		require.True(t, slices.Contains(pkgs, n), "docs/how-it-works.md's table names %s/, which holds no Go package", n)
	}
}
