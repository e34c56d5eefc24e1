package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
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
