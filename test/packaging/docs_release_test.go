package packaging

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releaseOnly matches what exists only once a release is published: its download URLs, its
// chart in the registry and its images.
var releaseOnly = regexp.MustCompile(`releases/(latest/)?download|oci://ghcr\.io/service-router|ghcr\.io/service-router/service-router-operator`)

// TestDocs_ReleaseOnlyCommandsSayTheyNeedARelease: no release has been published, so every
// section of the user's documentation (docs/, the README, the chart's README; DEVELOPMENT.md and
// its releasing sections aside) that points at a release's downloads, chart or images says that
// it needs the published release and gives the working alternative beside it: a make command
// that builds it from the clone.
func TestDocs_ReleaseOnlyCommandsSayTheyNeedARelease(t *testing.T) {
	docs, err := filepath.Glob(repoPath("docs", "*.md"))
	require.NoError(t, err)
	readmes, err := filepath.Glob(repoPath("charts", "*", "README.md"))
	require.NoError(t, err)
	checked := 0
	for _, doc := range append(append(docs, readmes...), repoPath("README.md")) {
		rel, _ := filepath.Rel(repoRoot, doc)
		if rel == filepath.Join("docs", "DEVELOPMENT.md") {
			continue // how releases are made and verified
		}
		for heading, text := range markdownSections(readFile(t, doc)) {
			if !releaseOnly.MatchString(text) {
				continue
			}
			checked++
			assert.Regexp(t, `(?i)needs\s+(the|a)\s+published\s+release|no\s+release\s+has\s+been\s+published`, text,
				"%s, section %q points at a release (%s) without saying that it needs the published release", rel, heading, releaseOnly.FindString(text))
			assert.Regexp(t, "(?m)(^|[`:]|&&)\\s*make\\s+[-a-zA-Z]", text,
				"%s, section %q points at a release without the make command that builds it from the clone beside it", rel, heading)
		}
	}
	assert.GreaterOrEqual(t, checked, 4, "sections pointing at a release (INSTALLATION, PLUGIN, the chart's README)")
}

// markdownSections splits a markdown text at its headings (lines starting with #, outside code
// blocks) and returns each section's text by its heading line ("" for the text before the first).
func markdownSections(markdown string) map[string]string {
	sections := map[string]string{}
	heading, fenced := "", false
	for _, line := range strings.Split(markdown, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		} else if !fenced && strings.HasPrefix(line, "#") {
			heading = line
		}
		sections[heading] += line + "\n"
	}
	return sections
}
