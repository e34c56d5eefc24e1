// Command nodeshards runs the node suite's tests (test/node, compiled with `go test -c -tags
// node`) in several processes side by side: each process starts its worlds in a network namespace
// of its own (framework.RunInNetworkNamespace), so the worlds of two shards never meet. A world
// mostly waits (pods to start, leases to expire, ExternalDNS to synchronize), so on two cores
// three shards take about half the time of one process running the tests one after another.
//
// It lists the tests with the binary's -test.list, spreads them over the shards by their expected
// duration (longest first, each to the shard with the least so far), runs each shard with
// -test.run '^(A|B)$', echoes each test's start and result as they happen and each shard's whole
// output when it ends, and fails when any shard fails.
//
//	go run ./hack/nodeshards --shards=3 --run=. --dir=test/node --timeout=45m bin/node.test -- -test.failfast
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// expected is each test's duration in seconds as measured on the 2-core development machine
// (docs/DEVELOPMENT.md), for balancing only: a test not listed counts as defaultSeconds.
var expected = map[string]int{
	"TestAKS_InstallJourneyPublishesThroughWorkloadIdentity": 220,
	"TestOLM_SubscriberJourney":                              210,
	"TestOLM_UpgradeFromThePreviousRelease":                  200,
	"TestUpgrade_From010InPodsAsDocumentedKeepsEveryRecord":  200,
	"TestOLM_InstallModes":                                   180,
	"TestChart_HighAvailabilityInPods":                       140,
	"TestIstio_IstiodAdmitsAnalysesAndProgramsEveryGateway":  170,
	"TestHomelab_WalkthroughResolves":                        70,
	"TestFailover_InPodsTakesOverALostRegion":                100,
	"TestQuickstart_ImportedImageAnswersInFiveMinutes":       70,
	"TestOLM_Scorecard":                                      40,
	"TestNodeWorld_SchedulesPodsOnBothNodes":                 30,
}

const defaultSeconds = 180

func main() {
	shards := flag.Int("shards", 3, "how many test processes run side by side")
	run := flag.String("run", ".", "which tests (a -test.run expression)")
	dir := flag.String("dir", "test/node", "the directory the tests run in (their package's)")
	timeout := flag.Duration("timeout", 45*time.Minute, "each shard's -test.timeout")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: nodeshards [flags] TEST-BINARY [-- TEST-FLAGS...]")
		os.Exit(2)
	}
	binary, extra := flag.Arg(0), flag.Args()[1:]
	tests, err := list(binary, *dir, *run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(tests) == 0 {
		fmt.Fprintf(os.Stderr, "nodeshards: no test matches %q\n", *run)
		os.Exit(1)
	}
	groups := spread(tests, *shards)
	start := time.Now()
	failed := runAll(groups, func(group []string) *exec.Cmd {
		args := append([]string{"-test.run", "^(" + strings.Join(group, "|") + ")$", "-test.v", "-test.count=1",
			"-test.timeout", timeout.String()}, extra...)
		cmd := exec.Command(binary, args...)
		cmd.Dir = *dir
		return cmd
	})
	fmt.Printf("nodeshards: %d tests in %d shards, %s\n", len(tests), len(groups), time.Since(start).Round(time.Second))
	if failed > 0 {
		fmt.Printf("nodeshards: %d of %d shards failed\n", failed, len(groups))
		os.Exit(1)
	}
}

// list asks the test binary for the tests matching run.
func list(binary, dir, run string) ([]string, error) {
	cmd := exec.Command(binary, "-test.list", run)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -test.list %q: %w", binary, run, err)
	}
	var tests []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") {
			tests = append(tests, strings.TrimSpace(line))
		}
	}
	return tests, nil
}

// spread assigns the tests to at most n groups, longest expected first, each to the group with the
// least expected time so far (ties: the lower index). Groups come out in a stable order.
func spread(tests []string, n int) [][]string {
	n = max(1, min(n, len(tests)))
	seconds := func(t string) int {
		if s, ok := expected[t]; ok {
			return s
		}
		return defaultSeconds
	}
	sorted := slices.Clone(tests)
	slices.SortStableFunc(sorted, func(a, b string) int { return seconds(b) - seconds(a) })
	groups, load := make([][]string, n), make([]int, n)
	for _, t := range sorted {
		i := slices.Index(load, slices.Min(load))
		groups[i] = append(groups[i], t)
		load[i] += seconds(t)
	}
	return groups
}

// progress matches the lines of go test -v that say a test started or ended.
var progress = regexp.MustCompile(`^(=== RUN|--- (PASS|FAIL|SKIP):)\s+Test\w*( |$)`)

// runAll runs one command per group side by side and returns how many failed. Each command's
// progress lines are echoed at once, prefixed with its shard; its whole output when it ends.
func runAll(groups [][]string, command func([]string) *exec.Cmd) (failed int) {
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i, group := range groups {
		tag := fmt.Sprintf("[shard %d/%d]", i+1, len(groups))
		fmt.Printf("%s %s\n", tag, strings.Join(group, " "))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var all bytes.Buffer
			cmd := command(group)
			pr, pw := io.Pipe()
			cmd.Stdout, cmd.Stderr = pw, pw
			started := time.Now()
			done := make(chan struct{})
			go func() {
				defer close(done)
				scanner := bufio.NewScanner(pr)
				scanner.Buffer(make([]byte, 1024*1024), 16*1024*1024)
				for scanner.Scan() {
					line := scanner.Text()
					all.WriteString(line + "\n")
					if progress.MatchString(line) {
						mu.Lock()
						fmt.Printf("%s %s\n", tag, strings.TrimSpace(line))
						mu.Unlock()
					}
				}
				_, _ = io.Copy(io.Discard, pr)
			}()
			err := cmd.Run()
			_ = pw.Close()
			<-done
			mu.Lock()
			defer mu.Unlock()
			verdict := "ok"
			if err != nil {
				verdict = "FAILED: " + err.Error()
				failed++
			}
			fmt.Printf("==================== %s output (%s, %s) ====================\n%s", tag, verdict,
				time.Since(started).Round(time.Second), all.String())
			fmt.Printf("==================== %s end ====================\n", tag)
		}()
	}
	wg.Wait()
	return failed
}
