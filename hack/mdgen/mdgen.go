// Package mdgen holds what the generators of documentation sections (hack/chartdocs,
// hack/dashboarddoc) share: a generated section between two marker comments of a hand-written
// document, and table cells that survive pipes and backticks.
package mdgen

import (
	"fmt"
	"strings"
)

// ReplaceBetween puts section between the markers begin and end of doc, keeping both markers and
// everything outside them; a document without the markers in that order is an error.
func ReplaceBetween(doc []byte, begin, end, section string) ([]byte, error) {
	text := string(doc)
	b := strings.Index(text, begin)
	e := strings.Index(text, end)
	if b < 0 || e < b {
		return nil, fmt.Errorf("no %q ... %q section", begin, end)
	}
	return []byte(text[:b+len(begin)] + section + text[e:]), nil
}

// EscapeCell escapes the pipes of s, which would end a table cell.
func EscapeCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Code shows s as inline code in a table cell; a backtick inside gets a longer fence.
func Code(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return EscapeCell(fence + s + fence)
}
