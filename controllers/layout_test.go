package controllers

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kitFiles are the reconciler kit: every reconciler uses them, and they may call back into a
// reconciler's file (through the base every reconciler embeds).
var kitFiles = []string{"reconciler.go", "reconciler_apply.go"}

// The package stays one a reader can find their way in: a file that uses another is not used by
// it in turn (apart from the kit), so each file can be read knowing only the files it uses.
// Methods count for the file that declares them; a method's receiver type does not make its file
// use the type's file (a reconciler's topic files are its own).
func TestLayout_NoTwoFilesUseEachOther(t *testing.T) {
	uses := fileUses(t)
	var both []string
	for a, targets := range uses {
		for b := range targets {
			if a < b && uses[b][a] && !slices.Contains(kitFiles, a) && !slices.Contains(kitFiles, b) {
				both = append(both, a+" <-> "+b)
			}
		}
	}
	slices.Sort(both)
	assert.Empty(t, both, "files that use each other both ways")
	assert.True(t, uses["serviceroute_controller.go"]["reconciler.go"], "the check sees uses (a reconciler uses the kit)")
}

// Every file of the package is named for its owner: the kit, a reconciler (<kind>_controller*.go)
// or one shared concern.
func TestLayout_FilesAreNamedForTheirOwner(t *testing.T) {
	shared := []string{"cache.go", "indexes.go", "inputs.go", "optional_apis.go", "reads.go", "setup.go", "watches.go"}
	kinds := []string{"clusteridentity", "dnsconfiguration", "dnspolicy", "gateway", "ingressdns", "serviceroute"}
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(f, "_test.go")
		name = strings.TrimSuffix(name, ".go") + ".go"
		owned := slices.Contains(kitFiles, name) || slices.Contains(shared, name) || name == "layout.go"
		for _, k := range kinds {
			owned = owned || name == k+"_controller.go" || strings.HasPrefix(name, k+"_controller_")
		}
		assert.True(t, owned, "%s: name it for the reconciler it serves (<kind>_controller_<topic>.go) or add it to the shared files", f)
	}
}

// maxLines bounds the package outside its tests: the reconcilers are drivers of their cores
// (internal/core, internal/decide), and what runs beside them (regional failover's loop,
// publication verification's) lives in packages of its own. A file that would take the package
// over the bound belongs in internal/.
const maxLines = 3000

func TestLayout_UnderMaxLines(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	total := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fh, err := os.Open(f)
		require.NoError(t, err)
		s := bufio.NewScanner(fh)
		for s.Scan() {
			total++
		}
		require.NoError(t, s.Err())
		require.NoError(t, fh.Close())
	}
	assert.Less(t, total, maxLines, "controllers/ has %d lines outside tests: move what is not a reconciler's driver into internal/", total)
	assert.Greater(t, total, 1000, "the count sees the package's files")
}

// The import graph keeps one direction: the packages the controllers and the commands call never
// import them, and a package of decisions never imports the loop that drives it. (Go refuses a
// cycle; this keeps the direction a reader expects where one more import would not yet be one.)
func TestLayout_ImportsGoOneWay(t *testing.T) {
	const module = "github.com/service-router/service-router-operator"
	callers := []string{module, module + "/controllers", module + "/cmd"}
	drivers := map[string][]string{ // a package -> the packages that drive it, which it must not import
		"internal/failover":   {"internal/failoverloop", "internal/zonewriter"},
		"internal/verify":     {"internal/verifyloop", "internal/prober"},
		"internal/prober":     {"internal/verifyloop", "internal/failoverloop"},
		"internal/zonewriter": {"internal/failoverloop"},
		"internal/decide":     {"internal/core", "internal/routerplan"},
		"internal/core":       {"internal/routerplan"},
	}
	var wrong []string
	imports := 0
	for _, root := range []string{"../internal", "../apis"} {
		require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
			for _, spec := range f.Imports {
				imports++
				imported, _ := strconv.Unquote(spec.Path.Value)
				for _, c := range callers {
					if imported == c || (c != module && strings.HasPrefix(imported, c+"/")) {
						wrong = append(wrong, path+" imports its caller "+imported)
					}
				}
				for _, d := range drivers[pkg] {
					if imported == module+"/"+d {
						wrong = append(wrong, path+" imports "+d+", which drives it")
					}
				}
			}
			return nil
		}))
	}
	assert.Empty(t, wrong)
	assert.Greater(t, imports, 100, "the check sees the imports")
}

// fileUses maps each non-test file of the package to the files whose package-level declarations it
// uses.
func fileUses(t *testing.T) map[string]map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		require.NoError(t, err)
		parsed[e.Name()] = f
	}
	declared := map[string]string{}         // package-level name -> file
	methods := map[string]map[string]bool{} // method name -> files declaring one of that name
	for file, f := range parsed {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					if methods[d.Name.Name] == nil {
						methods[d.Name.Name] = map[string]bool{}
					}
					methods[d.Name.Name][file] = true
				} else {
					declared[d.Name.Name] = file
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						declared[s.Name.Name] = file
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.Name != "_" {
								declared[n.Name] = file
							}
						}
					}
				}
			}
		}
	}
	uses := map[string]map[string]bool{}
	for file, f := range parsed {
		uses[file] = map[string]bool{}
		use := func(target string) {
			if target != "" && target != file {
				uses[file][target] = true
			}
		}
		var nodes []ast.Node
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				nodes = append(nodes, fn.Type, fn.Body) // the receiver is the type's own
			} else {
				nodes = append(nodes, d)
			}
		}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				// x.m: a method, when only one file declares a method of that name; m is no
				// package-level name of this package (it belongs to x).
				if files := methods[n.Sel.Name]; len(files) == 1 {
					for target := range files {
						use(target)
					}
				}
				ast.Inspect(n.X, visit)
				return false
			case *ast.Ident:
				use(declared[n.Name])
			}
			return true
		}
		for _, d := range nodes {
			ast.Inspect(d, visit)
		}
	}
	return uses
}
