package pipeline_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The README is the front door: what etl is, the two set-up commands, a
// worked example and a map of the docs. The reference lives in docs/.

const repoRoot = ".."

// readmeMaxLines bounds the README: it is read, not searched.
const readmeMaxLines = 260

// tableCellMax bounds a Markdown table cell: a row that grew into a
// paragraph belongs in prose below the table.
const tableCellMax = 300

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docPages are README.md and docs/*.md.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return append([]string{filepath.Join(repoRoot, "README.md")}, pages...)
}

// proseLines are the lines of a Markdown file outside fenced code blocks.
func proseLines(text string) []string {
	var out []string
	fenced := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, l)
		}
	}
	return out
}

// anchors are the GitHub anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range proseLines(text) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

func TestDocsREADMEIsShortAndMapsTheDocs(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(readme), "\n")
	require.LessOrEqual(t, lines, readmeMaxLines, "README.md is %d lines: move reference text into docs/", lines)

	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(readme), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		linked[filepath.Clean(target)] = true
	}
	entries, err := os.ReadDir(filepath.Join(repoRoot, "docs"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		require.True(t, linked[filepath.Join("docs", e.Name())], "README.md does not link docs/%s", e.Name())
	}

	// The first screen says what etl collects and that budgets hold.
	first := strings.Join(strings.SplitN(string(readme), "\n", 25)[:24], "\n")
	for _, word := range []string{"backlinks", "keyword", "listings", "Budgets"} {
		require.Contains(t, first, word, "the README's first screen")
	}
}

// TestDocsRelativeLinksResolve: every relative link of README.md and
// docs/*.md names a file of the repository and, with a #fragment into a
// Markdown file, one of its headings.
func TestDocsRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	for _, page := range docPages(t) {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, l := range proseLines(string(text)) {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				link := m[1]
				if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
					continue
				}
				target, frag, _ := strings.Cut(link, "#")
				file := page
				if target != "" {
					file = filepath.Join(filepath.Dir(page), target)
				}
				body, err := os.ReadFile(file)
				require.NoError(t, err, "%s links %q: no such file", page, link)
				if frag != "" && strings.HasSuffix(file, ".md") {
					require.True(t, anchors(string(body))[frag], "%s links %q: %s has no such heading", page, link, file)
				}
			}
		}
	}
}

// TestDocsTableCellsAreShort: no table cell of the repository's Markdown
// is longer than tableCellMax characters. Files under testdata (the copy
// of the provider's spec the catalog tests read) are not ours to reflow.
func TestDocsTableCellsAreShort(t *testing.T) {
	t.Parallel()
	cellSep := regexp.MustCompile(`[^\\]\|`)
	n := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".etl", "bin", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".md") {
			return nil
		}
		n++
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range proseLines(string(text)) {
			l = strings.TrimSpace(l)
			if !strings.HasPrefix(l, "|") {
				continue
			}
			// Split on the pipes that are not escaped (\|).
			row := " " + strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|") + " "
			idx := cellSep.FindAllStringIndex(row, -1)
			start := 0
			for _, ix := range append(idx, []int{len(row) - 1, len(row)}) {
				cell := strings.TrimSpace(row[start : ix[0]+1])
				start = ix[1]
				require.LessOrEqual(t, utf8.RuneCountInString(cell), tableCellMax,
					"%s: a table cell of %d characters; write it as prose below the table: %.80s...", path, utf8.RuneCountInString(cell), cell)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, n, 5, "the walk found the repository's Markdown")
}
