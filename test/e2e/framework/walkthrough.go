package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Helpers for tests that follow a written walkthrough (docs/INSTALLATION.md#homelab) step by
// step: they take the commands and files from the document itself, so that what is proven is
// what a reader copies, and a change to the document changes the test.

// DocSection returns the part of a markdown document under the line heading (for example
// "### Homelab"), up to the next heading of the same or a higher level.
func DocSection(markdown, heading string) (string, error) {
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	lines := strings.Split(markdown, "\n")
	start := -1
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue // a "# comment" line of a code block is no heading
		}
		if start < 0 {
			if strings.TrimSpace(line) == heading {
				start = i + 1
			}
			continue
		}
		if l := len(line) - len(strings.TrimLeft(line, "#")); l > 0 && l <= level && strings.HasPrefix(line[l:], " ") {
			return strings.Join(lines[start:i], "\n"), nil
		}
	}
	if start < 0 {
		return "", fmt.Errorf("no heading %q", heading)
	}
	return strings.Join(lines[start:], "\n"), nil
}

// FencedBlocks returns the fenced code blocks of a markdown text, without their fences, each
// ending with a newline; Mermaid diagrams (```mermaid) are pictures, not commands or files, and
// are left out.
func FencedBlocks(markdown string) []string {
	var blocks []string
	var current strings.Builder
	in, picture := false, false
	for line := range strings.SplitSeq(markdown, "\n") {
		if fence := strings.TrimSpace(line); strings.HasPrefix(fence, "```") {
			if in && !picture {
				blocks = append(blocks, current.String())
			}
			current.Reset()
			in, picture = !in, !in && fence == "```mermaid"
			continue
		}
		if in {
			current.WriteString(line + "\n")
		}
	}
	return blocks
}

// BlockWith returns the one fenced code block of markdown that contains substr.
func BlockWith(markdown, substr string) (string, error) {
	var found []string
	for _, b := range FencedBlocks(markdown) {
		if strings.Contains(b, substr) {
			found = append(found, b)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d code blocks contain %q, want one", len(found), substr)
	}
	return found[0], nil
}

// BlockWithLine returns the one fenced code block of markdown that has a line reading line
// (leading and trailing blanks aside): the shell block of a command, not a file whose comment
// mentions it.
func BlockWithLine(markdown, line string) (string, error) {
	var found []string
	for _, b := range FencedBlocks(markdown) {
		for l := range strings.SplitSeq(b, "\n") {
			if strings.TrimSpace(l) == line {
				found = append(found, b)
				break
			}
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%d code blocks have the line %q, want one", len(found), line)
	}
	return found[0], nil
}

// CommandArgs returns the arguments of the command of a shell block that starts with program
// (a line "program --flag ..."), its continuation lines (a trailing backslash) joined, and split
// into words as the shell does with quotes: 'single' and "double" quotes are removed, nothing is
// expanded ("$TSIG_SECRET" stays $TSIG_SECRET, for the caller to replace).
func CommandArgs(block, program string) ([]string, error) {
	joined := strings.ReplaceAll(block, "\\\n", " ")
	var found [][]string
	for line := range strings.SplitSeq(joined, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, program+" ") {
			continue
		}
		words, err := shellWords(line)
		if err != nil {
			return nil, err
		}
		found = append(found, words[1:])
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d command lines start with %q, want one", len(found), program)
	}
	return found[0], nil
}

// shellWords splits one command line into words: blanks separate words outside quotes, single
// quotes keep everything, double quotes keep everything but a backslash before " \ $ or `.
func shellWords(line string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		case c == '#' && !inWord:
			return words, nil // a comment to the end of the line
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			word.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				word.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			inWord = true
		case c == '\\' && i+1 < len(line):
			i++
			word.WriteByte(line[i])
			inWord = true
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// FlagValue returns the value of the one --name=value among args.
func FlagValue(args []string, name string) (string, error) {
	var values []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			values = append(values, v)
		}
	}
	if len(values) != 1 {
		return "", fmt.Errorf("--%s= is given %d times, want once: %q", name, len(values), args)
	}
	return values[0], nil
}

// ReplaceFlag returns args with the one --name=value replaced by --name=value (the value given),
// and the value replaced.
func ReplaceFlag(args []string, name, value string) ([]string, string, error) {
	old, err := FlagValue(args, name)
	if err != nil {
		return nil, "", err
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		if strings.HasPrefix(a, "--"+name+"=") {
			a = "--" + name + "=" + value
		}
		out = append(out, a)
	}
	return out, old, nil
}

// KubectlBinary returns $E2E_KUBECTL_BINARY or <repo>/bin/kubectl (built with the control plane).
func KubectlBinary() (string, error) {
	if p := os.Getenv("E2E_KUBECTL_BINARY"); p != "" {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "kubectl")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found: run `make control-plane` (`make e2e` does): %w", p, err)
	}
	return p, nil
}

// RunScript runs a shell script taken from a document (bash, stopping at the first failing
// command) as a reader in a checkout would, with kubectl from bin/ first on PATH and KUBECONFIG
// set to the cluster's admin kubeconfig. It returns the combined output. A script that runs make
// runs in the repository root; any other in the cluster's own checkout (CheckoutDir), so that the
// files a script writes (a cluster's values file) are this cluster's and never land in the tree.
func (cl *Cluster) RunScript(ctx context.Context, script string) (string, error) {
	kubectl, err := KubectlBinary()
	if err != nil {
		return "", err
	}
	dir, err := repoRoot()
	if err != nil {
		return "", err
	}
	if !regexp.MustCompile(`(?m)^\s*make\s`).MatchString(script) {
		if dir, err = cl.CheckoutDir(); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+cl.Kubeconfig,
		// kubectl's discovery cache of its own, not the user's ~/.kube.
		"KUBECACHEDIR="+filepath.Join(cl.Dir, "kube-cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			err = fmt.Errorf("%w\n--- script ---\n%s--- output ---\n%s", err, script, out)
		}
		return string(out), err
	}
	return string(out), nil
}

// CheckoutDir returns a directory of the cluster's own that looks like the repository root to a
// script (each of the root's entries a symbolic link to it), made on first use: the files a
// documented script writes there stay the cluster's.
func (cl *Cluster) CheckoutDir() (string, error) {
	dir := filepath.Join(cl.Dir, "checkout")
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return "", err
		}
	}
	return dir, nil
}
