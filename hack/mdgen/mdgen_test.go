package mdgen

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplaceBetween_KeepsTheHandWrittenParts(t *testing.T) {
	const begin, end = "<!-- BEGIN -->", "<!-- END -->"
	doc := "# Guide\n\n" + begin + "\nold\n" + end + "\n\nMore.\n"
	got, err := ReplaceBetween([]byte(doc), begin, end, "\nnew\n")
	require.NoError(t, err)
	assert.Equal(t, "# Guide\n\n"+begin+"\nnew\n"+end+"\n\nMore.\n", string(got))

	for _, doc := range []string{"# Guide without markers\n", end + "\n" + begin + "\n"} {
		_, err = ReplaceBetween([]byte(doc), begin, end, "new\n")
		assert.Error(t, err, "%q", doc)
	}
}

func TestCode_FencesBackticksAndEscapesPipes(t *testing.T) {
	for in, want := range map[string]string{
		`x`:         "`x`",
		"a`b":       "``a`b``",
		"`edge`":    "`` `edge` ``",
		`rate(x|y)`: "`rate(x\\|y)`",
	} {
		assert.Equal(t, want, Code(in), "%q", in)
	}
}
