package packaging

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"

	"github.com/service-router/service-router-operator/internal/naming"
)

// requiredExternalDNSFlags are the flags docs/EXTERNALDNS-INTEGRATION.md#deploying-externaldns
// calls required of every ExternalDNS instance serving the operator, whatever its provider, each
// with a check of its value for the instance of controller (the name its --annotation-filter
// selects, or the placeholder "<controller name>" where a text describes every instance).
// The filters come from internal/naming, the labels and annotations the operator writes: a filter
// that selects something else than what the operator writes is wrong even if the docs agree.
var requiredExternalDNSFlags = []struct {
	name  string
	check func(value, controller string) string
}{
	{"source", equals("crd")},
	{"crd-source-apiversion", equals("externaldns.k8s.io/v1alpha1")},
	{"crd-source-kind", equals("DNSEndpoint")},
	{"annotation-filter", func(value, controller string) string {
		return equals(naming.AnnotationController+"="+controller)(value, controller)
	}},
	// With it the API server sends each instance only its own DNSEndpoints. Without it, ExternalDNS
	// v0.22.0 and older started while other controllers' DNSEndpoints exist read none of their own
	// and delete every record they own; v0.23.0 keeps the zone (TestExternalDNSRestart_... in test/e2e).
	{"label-filter", func(value, controller string) string {
		return equals(naming.LabelController+"="+controller)(value, controller)
	}},
	{"registry", equals("txt")},
	{"policy", equals("sync")},
	// <controller>-<cluster>: unique per cluster; the value names the instance's controller.
	{"txt-owner-id", func(value, controller string) string {
		if !strings.HasPrefix(value, controller+"-") || len(value) == len(controller)+1 {
			return fmt.Sprintf("want <controller>-<cluster> for controller %s, got %q", controller, value)
		}
		return ""
	}},
	// <region>-<environment letter>-: the same in every cluster writing the zone.
	{"txt-prefix", func(value, _ string) string {
		if !strings.HasSuffix(value, "-") || len(value) < 2 {
			return fmt.Sprintf("want <region>-<environment letter>-, got %q", value)
		}
		return ""
	}},
}

func equals(want string) func(value, controller string) string {
	return func(value, _ string) string {
		if value != want {
			return fmt.Sprintf("want %q, got %q", want, value)
		}
		return ""
	}
}

// externalDNSFlagProblems checks one ExternalDNS configuration (flag name without dashes → value;
// absent flags are missing from the map) against requiredExternalDNSFlags and returns what is
// missing or wrong.
func externalDNSFlagProblems(flags map[string]string) []string {
	controller, _ := strings.CutPrefix(flags["annotation-filter"], naming.AnnotationController+"=")
	var problems []string
	for _, f := range requiredExternalDNSFlags {
		value, ok := flags[f.name]
		if !ok || value == "" {
			problems = append(problems, "--"+f.name+" is missing")
			continue
		}
		if p := f.check(value, controller); p != "" {
			problems = append(problems, "--"+f.name+": "+p)
		}
	}
	return problems
}

// flagsOfConfig is what ExternalDNS parsed from its arguments, named as its flags.
func flagsOfConfig(cfg *externaldns.Config) map[string]string {
	flags := map[string]string{
		"source":                strings.Join(cfg.Sources, ","),
		"crd-source-apiversion": cfg.CRDSourceAPIVersion,
		"crd-source-kind":       cfg.CRDSourceKind,
		"annotation-filter":     cfg.AnnotationFilter,
		"registry":              cfg.Registry,
		"policy":                cfg.Policy,
		"txt-owner-id":          cfg.TXTOwnerID,
		"txt-prefix":            cfg.TXTPrefix,
	}
	// ExternalDNS' default label filter is the empty selector (everything): not a filter.
	if cfg.LabelFilter != "" {
		flags["label-filter"] = cfg.LabelFilter
	}
	return flags
}

// flagInText matches --name=value in a shell command, a YAML argument list or prose; a value may
// hold placeholders with spaces such as <controller name>.
var flagInText = regexp.MustCompile("--([a-z][a-z0-9-]*)=((?:<[^>\n]+>|[^\\s\\\\`'\"<])+)")

// flagsInText returns the --name=value flags written in text.
func flagsInText(text string) map[string]string {
	flags := map[string]string{}
	for _, m := range flagInText.FindAllStringSubmatch(text, -1) {
		flags[m[1]] = strings.TrimRight(m[2], ".,;:)")
	}
	return flags
}

// fencedBlocks returns the fenced code blocks of a markdown text, Mermaid diagrams left out.
func fencedBlocks(markdown string) []string {
	return codeBlocks(markdown, func(info string) bool { return info != "mermaid" })
}

// codeBlocks returns the fenced code blocks of a markdown text whose info string (the language
// after the opening fence) keep accepts, without their fences.
func codeBlocks(markdown string, keep func(info string) bool) []string {
	var blocks []string
	var current []string
	in, kept := false, false
	for _, line := range strings.Split(markdown, "\n") {
		if fence := strings.TrimSpace(line); strings.HasPrefix(fence, "```") {
			if in && kept {
				blocks = append(blocks, strings.Join(current, "\n"))
			}
			current = nil
			in, kept = !in, !in && keep(strings.TrimPrefix(fence, "```"))
			continue
		}
		if in {
			current = append(current, line)
		}
	}
	return blocks
}

// isExternalDNSConfiguration reports whether a code block starts ExternalDNS (a command line
// `external-dns --...`) or lists its container arguments (`- --source=...`), rather than only
// mentioning its flags (a log line, a table).
func isExternalDNSConfiguration(block string) bool {
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "external-dns --") || strings.HasPrefix(line, "- --source=") {
			return true
		}
	}
	return false
}

// The check itself must be able to fail: the ExternalDNS flags NOTES.txt printed before
// --label-filter was added lack it, and the checker says so.
func TestExternalDNSFlags_CheckFindsAMissingLabelFilter(t *testing.T) {
	old := `each started with --source=crd --crd-source-apiversion=externaldns.k8s.io/v1alpha1
	--crd-source-kind=DNSEndpoint --annotation-filter=external-dns.alpha.kubernetes.io/controller=<controller name>.
	--registry=txt --policy=sync --txt-owner-id=<controller name>-<cluster> --txt-prefix=<region>-<environment letter>-`
	assert.Equal(t, []string{"--label-filter is missing"}, externalDNSFlagProblems(flagsInText(old)))

	mismatched := old + " --label-filter=router.io/controller=external-dns-neu"
	problems := externalDNSFlagProblems(flagsInText(mismatched))
	require.Len(t, problems, 1, "a label filter for another controller than the annotation filter's")
	assert.Contains(t, problems[0], "--label-filter")
}

// TestExternalDNSFlags_EveryPrintedConfigurationHasTheRequiredFlags: what the chart's NOTES print
// after an install, what the CSV's description shows on OperatorHub, and every ExternalDNS command
// or argument list in the documentation carries every required flag with its value, so that
// nothing a user copies lacks one (above all --label-filter, without which a restart empties the
// zone).
func TestExternalDNSFlags_EveryPrintedConfigurationHasTheRequiredFlags(t *testing.T) {
	t.Run("NOTES.txt", func(t *testing.T) {
		notes := readFile(t, repoPath(chartPath, "templates", "NOTES.txt"))
		assert.Empty(t, externalDNSFlagProblems(flagsInText(notes)))
	})
	t.Run("CSV description", func(t *testing.T) {
		assert.Empty(t, externalDNSFlagProblems(flagsInText(loadCSV(t).Spec.Description)),
			"fix config/manifests/bases and run `make bundle`")
	})

	// The documents and how many complete ExternalDNS configurations each shows at least, so that
	// a block that stops being recognised (reworded, moved) fails instead of passing unchecked.
	docs := map[string]int{
		"INSTALLATION.md":            2, // homelab (RFC 2136), AKS (Azure Private DNS)
		"EXTERNALDNS-INTEGRATION.md": 2, // Azure Private DNS, RFC 2136
		"OPERATOR-GUIDE.md":          0,
		"USER-GUIDE.md":              0,
		"MIGRATION.md":               0,
		"DEMO.md":                    0,
	}
	for doc, atLeast := range docs {
		t.Run(doc, func(t *testing.T) {
			found := 0
			for _, block := range fencedBlocks(readFile(t, repoPath("docs", doc))) {
				if !isExternalDNSConfiguration(block) {
					continue
				}
				found++
				assert.Empty(t, externalDNSFlagProblems(flagsInText(block)), "docs/%s:\n%s", doc, block)
			}
			assert.GreaterOrEqual(t, found, atLeast, "ExternalDNS configurations in docs/%s", doc)
		})
	}
}

// TestExternalDNSFlags_TheDocsTableListsTheRequiredFlags keeps the list above and the table of
// docs/EXTERNALDNS-INTEGRATION.md#deploying-externaldns, which users read as the requirements, the
// same: every flag of the table is required except --interval, which only sets the pace.
func TestExternalDNSFlags_TheDocsTableListsTheRequiredFlags(t *testing.T) {
	doc := readFile(t, repoPath("docs", "EXTERNALDNS-INTEGRATION.md"))
	start := strings.Index(doc, "## Deploying ExternalDNS")
	require.GreaterOrEqual(t, start, 0)
	section := doc[start:]
	section = section[:strings.Index(section, "\n### ")]
	var inTable []string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		firstCell := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`--([a-z][a-z0-9-]*)").FindAllStringSubmatch(firstCell, -1) {
			inTable = append(inTable, m[1])
		}
	}
	var required []string
	for _, f := range requiredExternalDNSFlags {
		required = append(required, f.name)
	}
	inTable = slices.DeleteFunc(inTable, func(name string) bool { return name == "interval" })
	assert.ElementsMatch(t, required, inTable,
		"the flags docs/EXTERNALDNS-INTEGRATION.md#deploying-externaldns lists and those test/packaging requires differ")
}
