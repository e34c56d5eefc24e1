package packaging

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownTree are the top-level directories of this repository: a path in a comment or a document
// that starts with one of them names a file of ours.
var ownTree = []string{"apis/", "bundle/", "charts/", "cmd/", "config/", "controllers/", "docs/", "hack/", "internal/", "test/"}

// namedFileExceptions are paths that start like ours but name another project's file.
var namedFileExceptions = []string{
	"config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml", // ExternalDNS's repository (docs/INSTALLATION.md)
}

var namedFile = regexp.MustCompile(`(?:^|[^\w./-])((?:[\w.-]+/)*[\w-]+\.(?:go|lua|yaml|mk|sh|md|json))\b`)

// Every Go comment and every document names only files that exist (issue 44): a path into the
// repository's own tree must exist, and a bare file name in a Go comment must be a file of the
// comment's package or of the tree. A moved or renamed file leaves no stale pointer behind. Not
// checked: a file's former place written as such ("then controllers/x.go, now ..."), another
// project's file ("apiextensions-apiserver's customresource_handler.go"), a suffix ("_test.go").
func TestDocs_EveryNamedFileExists(t *testing.T) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files").Output()
	require.NoError(t, err)
	files := strings.Fields(string(out))
	exists, names := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		exists[f] = true
		names[filepath.Base(f)] = true
	}
	var missing []string
	for _, f := range files {
		isGo := strings.HasSuffix(f, ".go")
		if !isGo && !(strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md")) && f != "README.md" {
			continue
		}
		file, err := os.Open(filepath.Join(repoRoot, f))
		require.NoError(t, err)
		scanner := bufio.NewScanner(file)
		scanner.Buffer(make([]byte, 1<<20), 1<<20)
		for line := 1; scanner.Scan(); line++ {
			text := scanner.Text()
			if isGo {
				i := strings.Index(text, "//")
				if i < 0 {
					continue
				}
				text = text[i+2:]
			}
			for _, m := range namedFile.FindAllStringSubmatchIndex(text, -1) {
				name := text[m[2]:m[3]]
				if before := text[:m[2]]; strings.Contains(before, "://") && !strings.ContainsAny(before[strings.LastIndex(before, "://"):], " \t)") {
					continue // part of a URL
				}
				if before := strings.TrimRight(text[:m[2]], "`"); strings.HasSuffix(before, "then ") || strings.HasSuffix(before, "'s ") ||
					strings.HasPrefix(filepath.Base(name), "_") {
					continue // a file's former place ("then controllers/x.go, now ..."), another project's file, a suffix
				}
				if missingFile(name, f, isGo, exists, names) {
					missing = append(missing, fmt.Sprintf("%s:%d: %s", f, line, name))
				}
			}
		}
		require.NoError(t, scanner.Err())
		file.Close()
	}
	assert.Empty(t, missing, "files named in comments or docs that do not exist")
}

func missingFile(name, in string, isGo bool, exists, names map[string]bool) bool {
	if slices.Contains(namedFileExceptions, name) {
		return false
	}
	if strings.Contains(name, "/") {
		own := slices.ContainsFunc(ownTree, func(dir string) bool { return strings.HasPrefix(name, dir) })
		return own && !exists[name] && !exists[filepath.Join(filepath.Dir(in), name)]
	}
	if !isGo || !strings.HasSuffix(name, ".go") {
		return false // a bare name in prose (route.yaml, values.yaml) is the reader's file
	}
	return !exists[filepath.Join(filepath.Dir(in), name)] && !names[name]
}

// The code layout tables of docs/ARCHITECTURE.md and docs/DEVELOPMENT.md name every package under
// internal/ (ARCHITECTURE as internal/<name>; DEVELOPMENT also in a row's short list, `<name>`),
// so that a package added or renamed is described where a newcomer looks first.
func TestDocs_CodeLayoutNamesEveryPackage(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, "internal"))
	require.NoError(t, err)
	layout := func(doc, heading string) string {
		data, err := os.ReadFile(filepath.Join(repoRoot, "docs", doc))
		require.NoError(t, err)
		text := string(data)
		if heading != "" {
			start := strings.Index(text, heading)
			require.GreaterOrEqual(t, start, 0, "%s has %q", doc, heading)
			text = text[start:]
		}
		var rows []string
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "| `") {
				rows = append(rows, line)
			} else if len(rows) > 0 && !strings.HasPrefix(line, "|") {
				break // the end of the first table
			}
		}
		return strings.Join(rows, "\n")
	}
	architecture, development := layout("ARCHITECTURE.md", "## Code layout"), layout("DEVELOPMENT.md", "")
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := "internal/" + e.Name()
		assert.Contains(t, architecture, "`"+name+"`", "docs/ARCHITECTURE.md's code layout describes %s", name)
		devRows := regexp.MustCompile("(?m)^\\| `internal/[^|]*`" + regexp.QuoteMeta(e.Name()) + "`")
		assert.True(t, strings.Contains(development, "`"+name+"`") || devRows.MatchString(development),
			"docs/DEVELOPMENT.md's layout table names %s", name)
	}
}
