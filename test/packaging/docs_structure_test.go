package packaging

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The structure of the user's documentation (issue 56): a long page has a table of contents that
// lists every one of its ## headings and links only to headings it has; no prose line is too long
// to read in a diff or a terminal; the troubleshooting tables name every condition reason of the
// API; and what the docs say `kubectl get` shows is what the CRDs' printer columns show.

// longPageLines is the length from which a page needs a table of contents.
const longPageLines = 300

// maxProseLine is the longest prose line the docs may have (tables, code blocks and link
// reference definitions aside).
const maxProseLine = 200

// docPages returns README.md and docs/*.md, relative to the repository root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(repoPath("docs", "*.md"))
	require.NoError(t, err)
	pages = append([]string{repoPath("README.md")}, pages...)
	for i, p := range pages {
		pages[i], err = filepath.Rel(repoRoot, p)
		require.NoError(t, err)
	}
	return pages
}

// mdHeading is one heading of a markdown page: its level (the number of #), its text and the
// anchor GitHub gives it.
type mdHeading struct {
	level  int
	text   string
	anchor string
}

// isFence says whether a markdown line opens or closes a fenced code block.
func isFence(line string) bool {
	trimmed := strings.TrimSpace(line)
	return strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")
}

// linesOutsideFences yields the lines of a markdown text outside fenced code blocks, each with
// its index (0-based).
func linesOutsideFences(markdown string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		fenced := false
		for i, line := range strings.Split(markdown, "\n") {
			if isFence(line) {
				fenced = !fenced
				continue
			}
			if !fenced && !yield(i, line) {
				return
			}
		}
	}
}

// githubAnchor is the anchor GitHub gives a heading's text (before the -1, -2 of a repeated
// one): lower case, every character but letters, digits, '-', '_' and spaces dropped, spaces
// made '-'.
func githubAnchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// markdownHeadings returns the headings of a markdown text outside code blocks, with their
// anchors made unique as GitHub does (a repeated anchor gets -1, -2, ...).
func markdownHeadings(markdown string) []mdHeading {
	var headings []mdHeading
	seen := map[string]int{}
	for _, line := range linesOutsideFences(markdown) {
		level := len(line) - len(strings.TrimLeft(line, "#"))
		if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
			continue
		}
		text := strings.TrimSpace(line[level:])
		anchor := githubAnchor(text)
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		headings = append(headings, mdHeading{level: level, text: text, anchor: anchor})
	}
	return headings
}

// tocLink is one entry of a table of contents: `- [text](#anchor)`.
var tocLink = regexp.MustCompile(`^\s*[-*] \[([^\]]+)\]\(#([^)\s]+)\)\s*$`)

// tableOfContents returns the anchors a page's table of contents links to: the list entries
// `- [text](#anchor)` before its first ## heading.
func tableOfContents(markdown string) []string {
	var anchors []string
	for _, line := range linesOutsideFences(markdown) {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if m := tocLink.FindStringSubmatch(line); m != nil {
			anchors = append(anchors, m[2])
		}
	}
	return anchors
}

// tocProblems returns what is wrong with a page's table of contents: a ## heading it does not
// list, a link to no heading of the page, or (for a long page) none at all.
func tocProblems(markdown string) []string {
	var problems []string
	toc := tableOfContents(markdown)
	long := strings.Count(markdown, "\n") > longPageLines
	if len(toc) == 0 {
		if long {
			problems = append(problems, fmt.Sprintf("the page has more than %d lines and no table of contents (a list of `- [Heading](#anchor)` before its first ## heading)", longPageLines))
		}
		return problems
	}
	anchors := map[string]bool{}
	headings := markdownHeadings(markdown)
	for _, h := range headings {
		anchors[h.anchor] = true
	}
	for _, h := range headings {
		if h.level == 2 && !slices.Contains(toc, h.anchor) {
			problems = append(problems, fmt.Sprintf("the table of contents does not list ## %s (#%s)", h.text, h.anchor))
		}
	}
	for _, a := range toc {
		if !anchors[a] {
			problems = append(problems, fmt.Sprintf("the table of contents links to #%s, which no heading of the page has", a))
		}
	}
	return problems
}

// TestDocs_TableOfContentsListsEveryHeading: every page of README.md and docs/ longer than 300
// lines has a table of contents; in every table of contents each ## heading of the page has an
// entry, and each entry's anchor is a heading of the page.
func TestDocs_TableOfContentsListsEveryHeading(t *testing.T) {
	withTOC := 0
	for _, page := range docPages(t) {
		text := readFile(t, repoPath(page))
		if len(tableOfContents(text)) > 0 {
			withTOC++
		}
		for _, problem := range tocProblems(text) {
			t.Errorf("%s: %s", page, problem)
		}
	}
	assert.GreaterOrEqual(t, withTOC, 7, "pages with a table of contents (the long ones: ARCHITECTURE, DEVELOPMENT, EXTERNALDNS-INTEGRATION, INSTALLATION, OPERATOR-GUIDE, PLUGIN, USER-GUIDE, CONCEPTS)")

	t.Run("control", func(t *testing.T) {
		page := "# Page\n\n- [One](#one)\n- [Two: `x`, y's](#two-x-ys)\n\n## One\n\n```sh\n## not a heading\n```\n\n## Two: `x`, y's\n\n### Sub\n"
		assert.Empty(t, tocProblems(page))
		assert.Len(t, tocProblems(strings.Replace(page, "- [One](#one)\n", "", 1)), 1, "a ## heading missing from the table of contents")
		assert.Len(t, tocProblems(strings.Replace(page, "(#two-x-ys)", "(#two-x-y)", 1)), 2, "a link to no heading (and its heading unlisted)")
		assert.Empty(t, tocProblems(strings.Replace(page, "## One\n", "## One\n\n- [Sub](#sub)\n", 1)), "a list after the first ## heading is not the table of contents")
		long := "# Long\n\n## Only\n" + strings.Repeat("text\n", longPageLines)
		assert.Len(t, tocProblems(long), 1, "a long page without a table of contents")
		assert.Equal(t, []string{"a", "a-1", "b_c"}, []string{markdownHeadings("## A\n## A\n## B_c\n")[0].anchor, markdownHeadings("## A\n## A\n")[1].anchor, markdownHeadings("## B_c")[0].anchor})
	})
}

// longProseLines returns the lines of a markdown text longer than maxProseLine characters
// (runes) outside code blocks, tables and link reference definitions, with their line numbers.
func longProseLines(markdown string) []string {
	var long []string
	linkDefinition := regexp.MustCompile(`^\s*\[[^\]]+\]:\s`)
	for i, line := range linesOutsideFences(markdown) {
		if strings.HasPrefix(strings.TrimSpace(line), "|") || linkDefinition.MatchString(line) {
			continue
		}
		if n := len([]rune(line)); n > maxProseLine {
			long = append(long, fmt.Sprintf("line %d has %d characters: %.60s...", i+1, n, strings.TrimSpace(line)))
		}
	}
	return long
}

// TestDocs_ProseLinesAreAtMost200Characters: no prose line of README.md or docs/ is longer than
// 200 characters; tables, code blocks and link reference definitions may be.
func TestDocs_ProseLinesAreAtMost200Characters(t *testing.T) {
	for _, page := range docPages(t) {
		for _, problem := range longProseLines(readFile(t, repoPath(page))) {
			t.Errorf("%s: %s; wrap it (at about 100 characters, as the rest of the page)", page, problem)
		}
	}

	t.Run("control", func(t *testing.T) {
		long := strings.Repeat("word ", 41)
		assert.Len(t, longProseLines("# T\n\n"+long+"\n"), 1, "a long prose line")
		assert.Len(t, longProseLines("  - "+long+"\n"), 1, "a long line in a list")
		assert.Empty(t, longProseLines("| "+long+" |\n"), "a table row")
		assert.Empty(t, longProseLines("```sh\n"+long+"\n```\n"), "a code block")
		assert.Empty(t, longProseLines("[ref]: https://example.com/"+long+"\n"), "a link reference definition")
		assert.Empty(t, longProseLines(strings.Repeat("é", maxProseLine)+"\n"), "characters, not bytes")
	})
}

// apiGoFiles returns the Go files of the two API packages.
func apiGoFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, group := range []string{"cluster", "routing"} {
		matches, err := filepath.Glob(repoPath("apis", group, "v1alpha1", "*.go"))
		require.NoError(t, err)
		for _, f := range matches {
			if !strings.HasSuffix(f, "_test.go") && !strings.HasPrefix(filepath.Base(f), "zz_generated") {
				files = append(files, f)
			}
		}
	}
	require.NotEmpty(t, files)
	return files
}

// apiStringConstants returns the values of the string constants of the API packages whose names
// start with prefix (Reason, Condition).
func apiStringConstants(t *testing.T, prefix string) []string {
	t.Helper()
	var values []string
	for _, f := range apiGoFiles(t) {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, name := range spec.Names {
				if !strings.HasPrefix(name.Name, prefix) || i >= len(spec.Values) {
					continue
				}
				if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					if !slices.Contains(values, v) {
						values = append(values, v)
					}
				}
			}
			return true
		})
	}
	slices.Sort(values)
	return values
}

// troubleshootingSection is the part of docs/OPERATOR-GUIDE.md whose tables say, for every
// condition reason, what it means and what to do.
const troubleshootingSection = "## Troubleshooting by condition reason"

// tableReasons returns the reasons a markdown text's reason tables give a row of: in a table
// whose header's first cell is "Reason", the `Reason` in code at the start of a row's first cell.
func tableReasons(markdown string) map[string]bool {
	reasons := map[string]bool{}
	row := regexp.MustCompile("^\\|\\s*`([A-Z][A-Za-z]+)`")
	inTable, reasonTable := false, false
	for _, line := range strings.Split(markdown, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		if !inTable {
			inTable = true
			first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
			reasonTable = strings.TrimSpace(first) == "Reason"
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && reasonTable {
			reasons[m[1]] = true
		}
	}
	return reasons
}

// TestDocs_TroubleshootingTablesCoverEveryReason: every condition reason the API declares (a
// Reason* constant of apis/) has a row in the troubleshooting tables of docs/OPERATOR-GUIDE.md,
// and every reason such a row names is one of the API's.
func TestDocs_TroubleshootingTablesCoverEveryReason(t *testing.T) {
	reasons := apiStringConstants(t, "Reason")
	require.Greater(t, len(reasons), 40, "the API's condition reasons")
	section := docSection(t, readFile(t, repoPath("docs", "OPERATOR-GUIDE.md")), troubleshootingSection)
	documented := tableReasons(section)
	for _, r := range reasons {
		assert.True(t, documented[r], "docs/OPERATOR-GUIDE.md, %s: no table row for the reason %s (apis/): add one, with what it means and what to do", troubleshootingSection, r)
	}
	for r := range documented {
		assert.Contains(t, reasons, r, "docs/OPERATOR-GUIDE.md, %s: a row for %s, which no Reason constant of apis/ declares", troubleshootingSection, r)
	}

	t.Run("control", func(t *testing.T) {
		table := "| Reason | Ready |\n| --- | --- |\n| `PolicyActive` | True |\n"
		assert.True(t, tableReasons(table)["PolicyActive"])
		assert.False(t, tableReasons("The reason `PolicyActive` in prose.\n")["PolicyActive"], "prose is not a table row")
		assert.False(t, tableReasons("| Reason | Ready |\n| --- | --- |\n| a | `PolicyActive` |\n")["PolicyActive"], "only a row's first cell")
		assert.False(t, tableReasons("| Finding | Meaning |\n| --- | --- |\n| `PolicyActive` | x |\n")["PolicyActive"], "only tables of reasons")
	})
}

// printerColumn is one `+kubebuilder:printcolumn` marker of a kind: its name and whether only
// `kubectl get -o wide` shows it (priority 1).
type printerColumn struct {
	name string
	wide bool
}

// apiPrinterColumns returns the printer columns of every kind of apis/, in marker order, by kind.
func apiPrinterColumns(t *testing.T) map[string][]printerColumn {
	t.Helper()
	marker := regexp.MustCompile(`^//\s*\+kubebuilder:printcolumn:(.*)$`)
	name := regexp.MustCompile(`(?:^|,)name="([^"]+)"`)
	priority := regexp.MustCompile(`(?:^|,)priority=(\d+)`)
	typeLine := regexp.MustCompile(`^type (\w+) struct`)
	columns := map[string][]printerColumn{}
	for _, f := range apiGoFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var pending []printerColumn
		for _, line := range strings.Split(string(data), "\n") {
			if m := marker.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				n := name.FindStringSubmatch(m[1])
				require.NotNil(t, n, "%s: a printcolumn without a name: %s", f, line)
				p := priority.FindStringSubmatch(m[1])
				pending = append(pending, printerColumn{name: n[1], wide: p != nil && p[1] != "0"})
				continue
			}
			if m := typeLine.FindStringSubmatch(line); m != nil && len(pending) > 0 {
				columns[m[1]] = pending
				pending = nil
			}
		}
	}
	return columns
}

// documentedColumns reads an API.md kind section's "Columns: A, B (...), C (`-o wide` adds D)."
// sentence: the columns `kubectl get` shows and those `-o wide` adds, in the order given.
func documentedColumns(section string) (shown, wide []string, ok bool) {
	text := strings.Join(strings.Fields(section), " ")
	i := strings.Index(text, "Columns: ")
	if i < 0 {
		return nil, nil, false
	}
	sentence := text[i+len("Columns: "):]
	// The sentence ends at the first ". " outside parentheses.
	depth := 0
	for j := 0; j < len(sentence); j++ {
		switch sentence[j] {
		case '(':
			depth++
		case ')':
			depth--
		case '.':
			if depth == 0 && (j+1 == len(sentence) || sentence[j+1] == ' ') {
				sentence = sentence[:j]
			}
		}
	}
	upper := regexp.MustCompile(`\b[A-Z][A-Z]+\b`)
	shownPart, widePart, _ := strings.Cut(sentence, "-o wide` adds")
	// Upper-case words inside parentheses explain a column; the columns are those outside.
	shownPart = regexp.MustCompile(`\([^()]*\)`).ReplaceAllString(shownPart, "")
	shownPart = strings.TrimSuffix(strings.TrimSpace(shownPart), "(`")
	shown = upper.FindAllString(shownPart, -1)
	if widePart != "" {
		w, _, _ := strings.Cut(widePart, ",")
		w = strings.TrimRight(strings.TrimSpace(w), ")")
		wide = upper.FindAllString(w, -1)
	}
	return shown, wide, true
}

// TestDocs_PrinterColumnsAreTheCRDs: for every kind, docs/API.md lists the columns `kubectl get`
// shows as the CRD's printer columns are, in their order, and what `-o wide` adds; and every
// page that says what `-o wide` adds names a column only `-o wide` shows.
func TestDocs_PrinterColumnsAreTheCRDs(t *testing.T) {
	columns := apiPrinterColumns(t)
	require.Len(t, columns, 5, "the five kinds' printer columns")
	api := readFile(t, repoPath("docs", "API.md"))
	wideColumns := map[string]bool{}
	for kind, cols := range columns {
		var want, wantWide []string
		for _, c := range cols {
			if c.wide {
				wantWide = append(wantWide, strings.ToUpper(c.name))
				wideColumns[strings.ToUpper(c.name)] = true
			} else {
				want = append(want, strings.ToUpper(c.name))
			}
		}
		var section string
		for heading, text := range markdownSections(api) {
			if strings.HasPrefix(heading, "### "+kind+" (") {
				section = text
			}
		}
		if !assert.NotEmpty(t, section, "docs/API.md has no section ### %s (...)", kind) {
			continue
		}
		shown, wide, ok := documentedColumns(section)
		if !assert.True(t, ok, "docs/API.md, %s: no \"Columns: ...\" sentence", kind) {
			continue
		}
		assert.Equal(t, want, shown, "docs/API.md, %s: the columns `kubectl get` shows (the CRD's printer columns of priority 0, in order)", kind)
		assert.Equal(t, wantWide, wide, "docs/API.md, %s: the columns `-o wide` adds (printer columns of priority 1)", kind)
	}

	// Elsewhere: "`-o wide` adds X" must name a column only -o wide shows.
	adds := regexp.MustCompile("-o wide`?\\)? adds ([^.;:)]*)")
	for _, page := range docPages(t) {
		for _, m := range adds.FindAllStringSubmatch(strings.Join(strings.Fields(readFile(t, repoPath(page))), " "), -1) {
			first := strings.Fields(m[1])
			assert.True(t, len(first) > 0 && wideColumns[strings.Trim(first[0], ",`")],
				"%s says `-o wide` adds %q: only %v are added by -o wide (printer columns of priority 1)", page, m[1], keys(wideColumns))
		}
	}

	// The output the docs show: a header line NAME A B ... in a code block is a kind's columns,
	// as `kubectl get` (priority 0) or `kubectl get -o wide` (all, in the CRD's order) prints them.
	header := regexp.MustCompile(`^(?:#\s*)?NAME((?:\s{2,}[A-Z]+)+)\s*$`)
	var outputs []string
	for _, cols := range columns {
		var shown, all []string
		for _, c := range cols {
			all = append(all, strings.ToUpper(c.name))
			if !c.wide {
				shown = append(shown, strings.ToUpper(c.name))
			}
		}
		outputs = append(outputs, strings.Join(shown, " "), strings.Join(all, " "))
	}
	headers := 0
	for _, page := range docPages(t) {
		for _, block := range fencedBlocks(readFile(t, repoPath(page))) {
			for _, line := range strings.Split(block, "\n") {
				m := header.FindStringSubmatch(strings.TrimSpace(line))
				if m == nil {
					continue
				}
				headers++
				got := strings.Join(strings.Fields(m[1]), " ")
				assert.Contains(t, outputs, got, "%s shows `kubectl get` printing NAME %s: no kind has these columns (%v)", page, got, outputs)
			}
		}
	}
	assert.GreaterOrEqual(t, headers, 2, "`kubectl get` outputs the docs show (USER-GUIDE's routes, OPERATOR-GUIDE's dns-config)")

	t.Run("control", func(t *testing.T) {
		assert.Nil(t, header.FindStringSubmatch("NAME is the object's name"))
		assert.Equal(t, "  MODE  ACTIVE", header.FindStringSubmatch("# NAME  MODE  ACTIVE")[1])
		shown, wide, ok := documentedColumns("Status: x.\nColumns: MODE, ACTIVE, REASON (the `Ready` reason), AGE\n(`-o wide` adds SOURCE). More text.\n")
		assert.True(t, ok)
		assert.Equal(t, []string{"MODE", "ACTIVE", "REASON", "AGE"}, shown)
		assert.Equal(t, []string{"SOURCE"}, wide)
		shown, wide, _ = documentedColumns("Columns: HOSTNAME, GATEWAY, PUBLISHED, AGE.\n")
		assert.Equal(t, []string{"HOSTNAME", "GATEWAY", "PUBLISHED", "AGE"}, shown)
		assert.Empty(t, wide)
	})
}

// keys returns a set's members, sorted.
func keys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDocs_ConceptsNamesEveryCondition: docs/CONCEPTS.md's glossary names every condition type
// the API declares (a Condition* constant of apis/), in bold, as a term it defines.
func TestDocs_ConceptsNamesEveryCondition(t *testing.T) {
	conditions := apiStringConstants(t, "Condition")
	require.Greater(t, len(conditions), 8, "the API's condition types")
	glossary := docSection(t, readFile(t, repoPath("docs", "CONCEPTS.md")), "## Glossary")
	for _, c := range conditions {
		assert.True(t, strings.Contains(glossary, "**"+c+"**"), "docs/CONCEPTS.md's glossary does not define the condition %s (apis/) as a term in bold", c)
	}
}

// goVersion is a Go version's numbers, for comparing "1.26.8" with "1.26.10".
func goVersion(t *testing.T, v string) []int {
	t.Helper()
	var out []int
	for _, part := range strings.Split(v, ".") {
		n, err := strconv.Atoi(part)
		require.NoError(t, err, "Go version %q", v)
		out = append(out, n)
	}
	return out
}

// TestDocs_TheMakefilesGoBuildsEveryModule: the Makefile exports GOTOOLCHAIN=<its toolchain>, so
// every module is built with that Go whatever Go the machine has. It must be at least the highest
// `go` (or `toolchain`) directive of go.mod and of the tools' modules under hack/tools (with less,
// a first `make test` fails at the module that needs more); the Dockerfile's builder image must have
// go.mod's Go; and README.md's prerequisites must name the toolchain beside the Go a user installs.
func TestDocs_TheMakefilesGoBuildsEveryModule(t *testing.T) {
	mods, err := filepath.Glob(repoPath("hack", "tools", "*", "go.mod"))
	require.NoError(t, err)
	mods = append(mods, repoPath("go.mod"))
	directive := regexp.MustCompile(`(?m)^(?:go |toolchain go)(\d+\.\d+(?:\.\d+)?)\s*$`)
	var highest, from string
	for _, mod := range mods {
		for _, m := range directive.FindAllStringSubmatch(readFile(t, mod), -1) {
			if highest == "" || slices.Compare(goVersion(t, m[1]), goVersion(t, highest)) > 0 {
				highest, from = m[1], mod
			}
		}
	}
	require.NotEmpty(t, highest, "no go directive in %v", mods)
	makefile := readFile(t, repoPath("Makefile"))
	require.Contains(t, makefile, "export GOTOOLCHAIN := $(GO_TOOLCHAIN_VERSION)", "the Makefile no longer chooses the toolchain: revisit what README.md says about Go")
	toolchain := regexp.MustCompile(`(?m)^GO_TOOLCHAIN_VERSION := go(\d+\.\d+\.\d+)$`).FindStringSubmatch(makefile)
	require.NotNil(t, toolchain, "Makefile: no line `GO_TOOLCHAIN_VERSION := go1.x.y`")
	rel, _ := filepath.Rel(repoRoot, from)
	assert.GreaterOrEqual(t, slices.Compare(goVersion(t, toolchain[1]), goVersion(t, highest)), 0,
		"the Makefile builds with Go %s; %s needs %s", toolchain[1], rel, highest)
	// The Dockerfile's builder image sets GOTOOLCHAIN=local (the official golang images do): its Go
	// must be the one go.mod asks for.
	builder := regexp.MustCompile(`(?m)^FROM golang:(\d+\.\d+) AS builder$`).FindStringSubmatch(readFile(t, repoPath("Dockerfile")))
	if assert.NotNil(t, builder, "Dockerfile: no `FROM golang:1.x AS builder`") {
		mainGo := directive.FindStringSubmatch(readFile(t, repoPath("go.mod")))
		require.NotNil(t, mainGo, "go.mod: no go directive")
		// golang:1.x is the newest 1.x.y: only the minor version counts.
		assert.GreaterOrEqual(t, slices.Compare(goVersion(t, builder[1]), goVersion(t, mainGo[1])[:2]), 0,
			"the Dockerfile builds with golang:%s; go.mod needs %s", builder[1], mainGo[1])
	}
	prerequisites := docSection(t, readFile(t, repoPath("README.md")), "## Prerequisites")
	row := regexp.MustCompile(`(?m)^\| Go \| \*\*(\d+\.\d+\.\d+)\*\*[^|]*\| `).FindString(prerequisites)
	if assert.NotEmpty(t, row, "README.md, ## Prerequisites: no row `| Go | **1.x.y** ...`") {
		assert.Contains(t, row, "GOTOOLCHAIN=go"+toolchain[1], "README.md's Go row does not name the toolchain the Makefile exports")
	}
}

// anchorLink is a markdown link to a heading: `[text](#anchor)` or `[text](FILE.md#anchor)`.
var anchorLink = regexp.MustCompile(`\]\(([^)\s#]*)#([^)\s]+)\)`)

// brokenAnchorLinks returns the links of a page (outside code blocks) to a heading that the
// page, or the markdown file it names, does not have; headingsOf gives a file's anchors.
func brokenAnchorLinks(page, markdown string, headingsOf func(file string) (map[string]bool, bool)) []string {
	var broken []string
	for i, line := range linesOutsideFences(markdown) {
		for _, m := range anchorLink.FindAllStringSubmatch(line, -1) {
			file, anchor := m[1], m[2]
			if strings.Contains(file, "://") || (file != "" && !strings.HasSuffix(file, ".md")) {
				continue
			}
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), file)
			}
			anchors, ok := headingsOf(target)
			if !ok {
				broken = append(broken, fmt.Sprintf("line %d links to %s, which does not exist", i+1, target))
			} else if !anchors[anchor] {
				broken = append(broken, fmt.Sprintf("line %d links to %s#%s, a heading %s does not have", i+1, target, anchor, target))
			}
		}
	}
	return broken
}

// TestDocs_AnchorLinksPointToHeadings: every link of README.md and docs/ to a heading, on the
// same page or another, names a heading that page has (GitHub's anchors), so that a moved or
// renamed section leaves no link that lands at the top of a page.
func TestDocs_AnchorLinksPointToHeadings(t *testing.T) {
	headingsOf := func(file string) (map[string]bool, bool) {
		data, err := os.ReadFile(repoPath(file))
		if err != nil {
			return nil, false
		}
		anchors := map[string]bool{}
		for _, h := range markdownHeadings(string(data)) {
			anchors[h.anchor] = true
		}
		return anchors, true
	}
	links := 0
	for _, page := range docPages(t) {
		text := readFile(t, repoPath(page))
		links += len(anchorLink.FindAllString(text, -1))
		for _, problem := range brokenAnchorLinks(page, text, headingsOf) {
			t.Errorf("%s: %s", page, problem)
		}
	}
	assert.Greater(t, links, 100, "links to headings in the docs")

	t.Run("control", func(t *testing.T) {
		pages := map[string]string{"docs/A.md": "# A\n\n## Two words\n", "docs/B.md": "[x](#two-words) [y](A.md#two-words) [z](A.md#one) [w](C.md#x) [u](https://e.com/#x) [v](../config/x.yaml#L1)\n"}
		of := func(file string) (map[string]bool, bool) {
			text, ok := pages[file]
			anchors := map[string]bool{}
			for _, h := range markdownHeadings(text) {
				anchors[h.anchor] = true
			}
			return anchors, ok
		}
		assert.Len(t, brokenAnchorLinks("docs/B.md", pages["docs/B.md"], of), 3, "#two-words is not B's, A has no #one, C.md does not exist")
		assert.Empty(t, brokenAnchorLinks("docs/A.md", "[x](#two-words)\n```\n[y](#nowhere)\n```\n", of))
	})
}

// TestDocs_TestedHelmIsTheBuiltOne: the Helm the Prerequisites table of docs/INSTALLATION.md says
// is tested is the one bin/helm is built from (hack/tools/go.mod), and its minimum is at least
// 3.17, the first Helm with the `--take-ownership` the upgrade from 0.1.0 runs.
func TestDocs_TestedHelmIsTheBuiltOne(t *testing.T) {
	m := regexp.MustCompile(`(?m)^\s*helm\.sh/helm/v3 v(\d+\.\d+\.\d+)`).FindStringSubmatch(readFile(t, repoPath("hack", "tools", "go.mod")))
	require.NotNil(t, m, "hack/tools/go.mod requires no helm.sh/helm/v3")
	row := prerequisiteRow(t, "Helm (for the chart)")
	require.GreaterOrEqual(t, len(row), 3)
	assert.Truef(t, strings.HasPrefix(row[2], m[1]+" "), "docs/INSTALLATION.md's Prerequisites say Helm %q is tested; bin/helm is built from helm.sh/helm/v3 v%s", row[2], m[1])
	assert.GreaterOrEqual(t, slices.Compare(goVersion(t, row[1]), []int{3, 17}), 0, "the minimum Helm must have --take-ownership (3.17), which the upgrade runs")
	assert.Contains(t, docSection(t, readFile(t, repoPath("docs", "INSTALLATION.md")), "### Upgrading"), "--take-ownership", "the upgrade no longer takes ownership: revisit the Helm minimum")
}

// apiConstantValues returns the string constants of the API packages by name (ReasonX: "X").
func apiConstantValues(t *testing.T) map[string]string {
	t.Helper()
	values := map[string]string{}
	for _, f := range apiGoFiles(t) {
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			if spec, ok := n.(*ast.ValueSpec); ok {
				for i, name := range spec.Names {
					if i < len(spec.Values) {
						if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, err := strconv.Unquote(lit.Value)
							require.NoError(t, err)
							values[name.Name] = v
						}
					}
				}
			}
			return true
		})
	}
	return values
}

// stalledReasons returns the reasons internal/decide's ProgressOf calls Stalled: the keys of its
// stalledReasons map, each an API constant.
func stalledReasons(t *testing.T) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), repoPath("internal", "decide", "progress.go"), nil, 0)
	require.NoError(t, err)
	constants := apiConstantValues(t)
	var reasons []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || spec.Names[0].Name != "stalledReasons" || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.CompositeLit)
		require.True(t, ok, "stalledReasons is a map literal")
		for _, elt := range lit.Elts {
			sel, ok := elt.(*ast.KeyValueExpr).Key.(*ast.SelectorExpr)
			require.True(t, ok, "a key of stalledReasons that is not an API constant")
			v, ok := constants[sel.Sel.Name]
			require.True(t, ok, "stalledReasons names %s, which apis/ does not declare", sel.Sel.Name)
			reasons = append(reasons, v)
		}
		return false
	})
	require.NotEmpty(t, reasons, "internal/decide/progress.go has no stalledReasons")
	slices.Sort(reasons)
	return reasons
}

// codeNames returns the `Name`s in code of a text, sorted and unique.
func codeNames(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile("`([A-Z][A-Za-z]+)`").FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// TestDocs_StalledReasonsAreTheCodes: the reasons the docs call Stalled are those ProgressOf
// makes Stalled: OPERATOR-GUIDE's list of them, and USER-GUIDE's table of the reasons a route can
// stall with (the Stalled reasons the ServiceRoute troubleshooting table has).
func TestDocs_StalledReasonsAreTheCodes(t *testing.T) {
	stalled := stalledReasons(t)
	guide := readFile(t, repoPath("docs", "OPERATOR-GUIDE.md"))

	// OPERATOR-GUIDE: the bullet "`Stalled=True`: ... The message says what to change."
	section := strings.Join(strings.Fields(docSection(t, guide, "## Status, conditions and events")), " ")
	start := strings.Index(section, "`Stalled=True`:")
	require.GreaterOrEqual(t, start, 0, "docs/OPERATOR-GUIDE.md, ## Status, conditions and events: no `Stalled=True`: list")
	end := strings.Index(section[start:], "The message says what to change")
	require.Greater(t, end, 0, "the `Stalled=True` list ends with \"The message says what to change\"")
	listed := slices.DeleteFunc(codeNames(section[start:start+end]), func(s string) bool { return s == "Stalled" })
	assert.Equal(t, stalled, listed, "docs/OPERATOR-GUIDE.md lists as Stalled other reasons than internal/decide's stalledReasons")

	// USER-GUIDE: the table of "A route is Stalled" has the Stalled reasons a ServiceRoute has.
	var routeStalled []string
	for r := range tableReasons(docSection(t, guide, "### ServiceRoute")) {
		if slices.Contains(stalled, r) {
			routeStalled = append(routeStalled, r)
		}
	}
	slices.Sort(routeStalled)
	require.NotEmpty(t, routeStalled)
	faq := keys(tableReasons(docSection(t, readFile(t, repoPath("docs", "USER-GUIDE.md")), "### A route is Stalled")))
	assert.Equal(t, routeStalled, faq, "docs/USER-GUIDE.md, ### A route is Stalled: its table must have exactly the Stalled reasons of OPERATOR-GUIDE's ServiceRoute table")
}
