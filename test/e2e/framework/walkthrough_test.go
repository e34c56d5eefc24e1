package framework

import (
	"slices"
	"testing"
)

// The walkthrough helpers read commands as a shell would: a reader's copy of a command and the
// test's must be the same words.
func TestCommandArgs_JoinsContinuationsAndRemovesQuotes(t *testing.T) {
	block := "SECRET=$(cat key)\n" +
		"external-dns --source=crd \\\n" +
		"  --rfc2136-tsig-secret=\"$SECRET\" --txt-prefix='home-d-' \\\n" +
		"  --events   # publish at once\n"
	got, err := CommandArgs(block, "external-dns")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--source=crd", "--rfc2136-tsig-secret=$SECRET", "--txt-prefix=home-d-", "--events"}
	if !slices.Equal(got, want) {
		t.Errorf("CommandArgs = %q, want %q", got, want)
	}
	if _, err := CommandArgs(block+"external-dns --again\n", "external-dns"); err == nil {
		t.Error("two external-dns command lines: want an error")
	}
}

func TestDocSection_EndsAtTheNextHeadingOfTheSameLevel(t *testing.T) {
	doc := "## Helm\nintro\n### Homelab\none\n```sh\n# not a heading\n```\n#### Detail\ntwo\n### AKS\nthree\n"
	got, err := DocSection(doc, "### Homelab")
	if err != nil {
		t.Fatal(err)
	}
	if want := "one\n```sh\n# not a heading\n```\n#### Detail\ntwo"; got != want {
		t.Errorf("DocSection = %q, want %q", got, want)
	}
	if b, err := BlockWithLine(got, "# not a heading"); err != nil || b != "# not a heading\n" {
		t.Errorf("BlockWithLine = %q, %v", b, err)
	}
}

// A Mermaid diagram that names a field is a picture, not the block a test looks for.
func TestFencedBlocks_LeaveOutMermaidDiagrams(t *testing.T) {
	doc := "text\n```mermaid\nflowchart LR\n  a[\"adoptsRegions: [weu]\"]\n```\n\n```yaml\nadoptsRegions: [weu]\n```\n"
	blocks := FencedBlocks(doc)
	if len(blocks) != 1 || blocks[0] != "adoptsRegions: [weu]\n" {
		t.Fatalf("blocks %q", blocks)
	}
	if b, err := BlockWith(doc, "adoptsRegions:"); err != nil || b != blocks[0] {
		t.Fatalf("BlockWith: %q, %v", b, err)
	}
}
