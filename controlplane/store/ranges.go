// ranges.go: how sequence ranges cross the seam. Go holds a set of type_seq or origin_seq
// ranges as half-open [lo, hi) pairs; SQL holds them as int8multirange.

package store

import (
	"strconv"
	"strings"
)

// multirange renders [lo, hi) pairs as an int8multirange literal ("{}" for none).
func multirange(rs [][2]int64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = "[" + strconv.FormatInt(r[0], 10) + "," + strconv.FormatInt(r[1], 10) + ")"
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// multirangeOrNull is multirange, or SQL null for no ranges (a filter that is not given).
func multirangeOrNull(rs [][2]int64) any {
	if len(rs) == 0 {
		return nil
	}
	return multirange(rs)
}

// rangePairs turns the two-element arrays SQL returns for a multirange (array[lower, upper]
// per range) back into pairs; none is nil.
func rangePairs(in [][]int64) [][2]int64 {
	var out [][2]int64
	for _, p := range in {
		if len(p) == 2 {
			out = append(out, [2]int64{p[0], p[1]})
		}
	}
	return out
}

// rangesSQL is the select-list expression that returns a multirange column as an array of
// [lower, upper] pairs (read back with rangePairs).
func rangesSQL(column string) string {
	return "array(select array[lower(r), upper(r)] from unnest(coalesce(" + column + ", '{}'::int8multirange)) r)"
}

// textsOrNull is SQL null for an empty list (a filter that is not given).
func textsOrNull(s []string) any {
	if len(s) == 0 {
		return nil
	}
	return s
}

// textOrNull is SQL null for an empty string (a cursor that is not given).
func textOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
