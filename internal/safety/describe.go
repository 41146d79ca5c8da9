package safety

import (
	"fmt"
	"strings"
)

// ListLimit is how many names a diagnostic lists before "and N more".
const ListLimit = 20

// Cut lists n items in a diagnostic, one indented line each (line(i) for
// the i-th), the first ListLimit of them and then how many more.
func Cut(n int, line func(i int) string) string {
	var b strings.Builder
	for i := range n {
		if i == ListLimit {
			fmt.Fprintf(&b, "  ... and %d more (%d in all)\n", n-ListLimit, n)
			break
		}
		b.WriteString("  " + line(i) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// CutInline lists names on one line, comma-separated: the first ListLimit
// of them and then how many more.
func CutInline(names []string) string {
	if len(names) <= ListLimit {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (%d in all)", strings.Join(names[:ListLimit], ", "), len(names)-ListLimit, len(names))
}

// CutLines is Cut over lines already written.
func CutLines(lines []string) string {
	return Cut(len(lines), func(i int) string { return lines[i] })
}

// describe lists users and claims, with each claim's mode, class and phase.
func describe(ups []UserPlan) string {
	return Cut(len(ups), func(i int) string {
		up := ups[i]
		s := fmt.Sprintf("%s: %s", up.Who(), up.ClaimName)
		if up.Live != nil {
			s += fmt.Sprintf(" (%s, class %q, %s)", strings.Join(up.Live.AccessModes, ","), up.Live.StorageClass, orDash(up.Live.Phase))
		}
		return s
	})
}

// describeReasons lists users and claims with the reason of each one's action.
func describeReasons(ups []UserPlan) string {
	return Cut(len(ups), func(i int) string { return fmt.Sprintf("%s: %s (%s)", ups[i].Who(), ups[i].ClaimName, ups[i].Reason) })
}

func classSuffix(class string) string {
	if class == "" {
		return ""
	}
	return fmt.Sprintf(" and storage class %q", class)
}

func orDash(s string) string { return orDefault(s, "-") }

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
