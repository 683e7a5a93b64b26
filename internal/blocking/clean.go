package blocking

import (
	"sort"
	"strings"

	"github.com/AdguardTeam/urlfilter/rules"
)

// skipReasons are the kinds of rules the engine cannot use, by the marker
// that gives them away. Maintained lists carry some (written for uBlock
// Origin or AdGuard's browser extensions); they are dropped at load and
// counted, never a start-up failure.
var skipReasons = []struct{ marker, reason string }{
	{"##+js(", "scriptlet"}, {"#@#+js(", "scriptlet"}, {"#%#", "scriptlet"}, {"#@%#", "scriptlet"},
	{"#?#", "procedural cosmetic"}, {"#@?#", "procedural cosmetic"}, {"#$?#", "procedural cosmetic"},
	{"##^", "HTML filter"}, {"#@#^", "HTML filter"},
	{":has-text(", "procedural cosmetic"}, {":-abp-", "procedural cosmetic"}, {":matches-css", "procedural cosmetic"},
	{":xpath(", "procedural cosmetic"}, {":upward(", "procedural cosmetic"}, {":remove(", "procedural cosmetic"},
	{":style(", "procedural cosmetic"}, {":min-text-length(", "procedural cosmetic"}, {":watch-attr(", "procedural cosmetic"},
	{":matches-path(", "procedural cosmetic"}, {":matches-attr(", "procedural cosmetic"}, {":matches-prop(", "procedural cosmetic"},
	{":others(", "procedural cosmetic"}, {":shadow(", "procedural cosmetic"}, {":contains(", "procedural cosmetic"},
	{":remove-attr(", "procedural cosmetic"}, {":remove-class(", "procedural cosmetic"},
}

// ListStats counts what a list held.
type ListStats struct {
	Rules   int            // rules the engine loaded
	Skipped map[string]int // rules dropped, by reason
}

// SkippedTotal is the number of dropped rules.
func (s ListStats) SkippedTotal() int {
	n := 0
	for _, v := range s.Skipped {
		n += v
	}
	return n
}

// add merges o into s.
func (s *ListStats) add(o ListStats) {
	s.Rules += o.Rules
	if s.Skipped == nil {
		s.Skipped = map[string]int{}
	}
	for k, v := range o.Skipped {
		s.Skipped[k] += v
	}
}

// logArgs are the stats as log attributes, reasons in a stable order.
func (s ListStats) logArgs() []any {
	args := []any{"rules", s.Rules, "skipped", s.SkippedTotal()}
	reasons := make([]string, 0, len(s.Skipped))
	for r := range s.Skipped {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		args = append(args, "skipped_"+strings.ReplaceAll(r, " ", "_"), s.Skipped[r])
	}
	return args
}

// clean keeps the lines of a list that the engine can use.
func clean(text string, listID int) (string, ListStats) {
	st := ListStats{Skipped: map[string]int{}}
	var b strings.Builder
	b.Grow(len(text))
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "!") || strings.HasPrefix(line, "[") {
			continue
		}
		if reason := skipReason(line); reason != "" {
			st.Skipped[reason]++
			continue
		}
		if _, err := rules.NewRule(line, listID); err != nil {
			st.Skipped["not understood by the engine"]++
			continue
		}
		st.Rules++
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), st
}

func skipReason(line string) string {
	for _, s := range skipReasons {
		if strings.Contains(line, s.marker) {
			return s.reason
		}
	}
	return ""
}
