package runs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TaskFilter keeps the tasks etl runs show --status and --task name.
type TaskFilter struct {
	statuses []string
	// pattern is --task: found anywhere in the name, where * stands for
	// any characters and ? for one.
	pattern string
	glob    *regexp.Regexp
}

// NewTaskFilter returns the filter of --status statuses (each of
// TaskStatuses) and --task pattern.
func NewTaskFilter(statuses []string, pattern string) (TaskFilter, error) {
	f := TaskFilter{pattern: pattern}
	for _, st := range statuses {
		st = strings.TrimSpace(st)
		if !slices.Contains(TaskStatuses, st) {
			return f, fmt.Errorf("--status must be one of %s, got %q", strings.Join(TaskStatuses, ", "), st)
		}
		if !slices.Contains(f.statuses, st) {
			f.statuses = append(f.statuses, st)
		}
	}
	if strings.ContainsAny(pattern, "*?") {
		var re strings.Builder
		for _, r := range pattern {
			switch r {
			case '*':
				re.WriteString(`.*`)
			case '?':
				re.WriteString(`.`)
			default:
				re.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		f.glob = regexp.MustCompile(re.String())
	}
	return f, nil
}

// Set says whether --status or --task was given.
func (f TaskFilter) Set() bool { return len(f.statuses) > 0 || f.pattern != "" }

func (f TaskFilter) match(t TaskRow) bool {
	if len(f.statuses) > 0 && !slices.Contains(f.statuses, t.Status) {
		return false
	}
	switch {
	case f.glob != nil:
		return f.glob.MatchString(t.Name)
	case f.pattern != "":
		return strings.Contains(t.Name, f.pattern)
	}
	return true
}

// Keep returns the tasks f matches, in their order; never nil.
func (f TaskFilter) Keep(tasks []TaskRow) []TaskRow {
	out := []TaskRow{}
	for _, t := range tasks {
		if f.match(t) {
			out = append(out, t)
		}
	}
	return out
}

// String says the filter as the flags were given.
func (f TaskFilter) String() string {
	var parts []string
	if len(f.statuses) > 0 {
		parts = append(parts, "--status "+strings.Join(f.statuses, ","))
	}
	if f.pattern != "" {
		parts = append(parts, "--task "+strconv.Quote(f.pattern))
	}
	return strings.Join(parts, " ")
}
