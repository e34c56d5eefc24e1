// Command testqueue runs the tests of compiled test binaries (`go test -c`), each test in a process
// of its own, at most --workers at a time: whenever a test ends, the next one starts. The end-to-end
// and node suites mostly wait (API servers, pods, leases, ExternalDNS's synchronizations), so on two
// cores several run side by side, but not without limit: every world also computes, and too many
// at once make each slower than the time they save. One queue over both suites bounds what runs at
// once, where two suites each split its own way added up (docs/DEVELOPMENT.md has the measurements).
//
// A test in a process of its own: its -test.timeout is its own (no suite runs near a timeout meant
// for a whole suite), a node test gets its own network namespace (test/node's TestMain), and a test
// that hangs or panics takes no other with it.
//
// The tests start longest expected first (expected, measured), so that the last to start are the
// short ones; --max caps one suite's tests at once (a node world computes more than an end-to-end
// one), the other suite's filling the workers meanwhile. Each test's start and result are echoed as they happen, its whole output when it ends;
// at the end a table of every test's time, and the command fails when any test failed.
//
//	go run ./hack/testqueue --workers=4 --max=test/node=2 --timeout=20m test/e2e=bin/e2e.test test/node=bin/node.test -- -test.failfast
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// expected is each test's duration in seconds as measured on the 2-core development machine
// (docs/DEVELOPMENT.md), for ordering only: a test not listed counts as defaultSeconds, so it starts
// among the long ones rather than last.
var expected = map[string]int{
	// test/node
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

const defaultSeconds = 120

// A test is one test function of one suite: the binary that holds it and the directory it runs in
// (its package's).
type test struct {
	dir, binary, name string
}

func (t test) String() string { return t.dir + " " + t.name }

func main() {
	workers := flag.Int("workers", 4, "how many tests run side by side")
	run := flag.String("run", ".", "which tests (a -test.run expression)")
	timeout := flag.Duration("timeout", 20*time.Minute, "each test's -test.timeout")
	capsFlag := flag.String("max", "", "at most this many of one suite's tests at once: DIR=N[,DIR=N...]")
	flag.Parse()
	caps, err := parseCaps(*capsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	suites, extra := splitArgs(flag.Args())
	if len(suites) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testqueue [flags] DIR=TEST-BINARY... [-- TEST-FLAGS...]")
		os.Exit(2)
	}
	var tests []test
	for _, suite := range suites {
		dir, binary, ok := strings.Cut(suite, "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "testqueue: %q is not DIR=TEST-BINARY\n", suite)
			os.Exit(2)
		}
		names, err := list(binary, dir, *run)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, name := range names {
			tests = append(tests, test{dir: dir, binary: binary, name: name})
		}
	}
	if len(tests) == 0 {
		fmt.Fprintf(os.Stderr, "testqueue: no test matches %q\n", *run)
		os.Exit(1)
	}
	start := time.Now()
	results := runQueue(inOrder(tests), *workers, caps, func(t test) *exec.Cmd {
		args := append([]string{"-test.run", "^" + t.name + "$", "-test.v", "-test.count=1",
			"-test.timeout", timeout.String()}, extra...)
		cmd := exec.Command(t.binary, args...)
		cmd.Dir = t.dir
		return cmd
	})
	fmt.Print(summary(results, *workers, time.Since(start)))
	for _, r := range results {
		if r.err != nil {
			os.Exit(1)
		}
	}
}

// parseCaps reads --max: "test/node=2,test/e2e=3".
func parseCaps(s string) (map[string]int, error) {
	caps := map[string]int{}
	for _, c := range strings.Split(s, ",") {
		if c == "" {
			continue
		}
		dir, n, ok := strings.Cut(c, "=")
		limit, err := strconv.Atoi(n)
		if !ok || err != nil || limit < 1 {
			return nil, fmt.Errorf("testqueue: --max %q: want DIR=N with N at least 1", c)
		}
		caps[dir] = limit
	}
	return caps, nil
}

// splitArgs separates the suites from the test binaries' flags after "--".
func splitArgs(args []string) (suites, extra []string) {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i], args[i+1:]
	}
	return args, nil
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

// seconds is a test's expected duration.
func seconds(name string) int {
	if s, ok := expected[name]; ok {
		return s
	}
	return defaultSeconds
}

// inOrder sorts the tests longest expected first; ties keep their order.
func inOrder(tests []test) []test {
	sorted := slices.Clone(tests)
	slices.SortStableFunc(sorted, func(a, b test) int { return cmp.Compare(seconds(b.name), seconds(a.name)) })
	return sorted
}

// progress matches the lines of go test -v that say a test started or ended.
var progress = regexp.MustCompile(`^(=== RUN|--- (PASS|FAIL|SKIP):)\s+Test\w*( |$)`)

// A result is how one test's process ended.
type result struct {
	test
	took time.Duration
	err  error
}

// runQueue runs one command per test, at most workers at a time and at most caps[dir] of one
// suite's at a time (no cap when absent), each time starting the first test in the given order
// that may start, and returns every test's result in that order. Each command's progress lines are
// echoed at once, its whole output when it ends.
func runQueue(tests []test, workers int, caps map[string]int, command func(test) *exec.Cmd) []result {
	var (
		echo    sync.Mutex
		mu      sync.Mutex
		ended   = sync.NewCond(&mu)
		wg      sync.WaitGroup
		running int
		bySuite = map[string]int{}
		started = make([]bool, len(tests))
		results = make([]result, len(tests))
	)
	workers = max(1, workers)
	mayStart := func(i int) bool {
		limit, capped := caps[tests[i].dir]
		return !started[i] && running < workers && (!capped || bySuite[tests[i].dir] < max(1, limit))
	}
	mu.Lock()
	for left := len(tests); left > 0; {
		i := -1
		for k := range tests {
			if mayStart(k) {
				i = k
				break
			}
		}
		if i < 0 {
			ended.Wait()
			continue
		}
		started[i], left, running = true, left-1, running+1
		bySuite[tests[i].dir]++
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := runOne(tests[i], command(tests[i]), &echo)
			mu.Lock()
			results[i], running = r, running-1
			bySuite[tests[i].dir]--
			ended.Broadcast()
			mu.Unlock()
		}()
	}
	mu.Unlock()
	wg.Wait()
	return results
}

// runOne runs one test's command, echoing under mu.
func runOne(t test, cmd *exec.Cmd, mu *sync.Mutex) result {
	var all bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	tag := "[" + t.dir + "]"
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
				fmt.Printf("%s %s %s\n", time.Now().Format("15:04:05"), tag, strings.TrimSpace(line))
				mu.Unlock()
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	_ = pw.Close()
	<-done
	took := time.Since(started)
	mu.Lock()
	defer mu.Unlock()
	verdict := "ok"
	if err != nil {
		verdict = "FAILED: " + err.Error()
	}
	fmt.Printf("==================== %s output (%s, %s) ====================\n%s", t, verdict, took.Round(time.Second), all.String())
	fmt.Printf("==================== %s end ====================\n", t)
	return result{test: t, took: took, err: err}
}

// summary is the closing table: every test's time, longest first, and the verdict.
func summary(results []result, workers int, wall time.Duration) string {
	sorted := slices.Clone(results)
	slices.SortStableFunc(sorted, func(a, b result) int { return cmp.Compare(b.took, a.took) })
	var b strings.Builder
	var sum time.Duration
	failed := 0
	for _, r := range sorted {
		verdict := "ok"
		if r.err != nil {
			verdict, failed = "FAIL", failed+1
		}
		sum += r.took
		fmt.Fprintf(&b, "testqueue: %-4s %6.0fs  %s\n", verdict, r.took.Seconds(), r)
	}
	fmt.Fprintf(&b, "testqueue: %d tests, %d failed, %d at a time: %s (%s of tests one after another)\n",
		len(results), failed, workers, wall.Round(time.Second), sum.Round(time.Second))
	return b.String()
}
