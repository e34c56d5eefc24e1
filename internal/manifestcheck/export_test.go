package manifestcheck

// What the external tests (admit_test.go, which use preview's World) check of the package's own.
var (
	CRDNames   = crdNames
	ResourceOf = resourceOf
)
