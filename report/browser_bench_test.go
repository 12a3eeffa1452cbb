package report

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/net/websocket"
)

const firefoxPath = "/usr/bin/firefox-esr"

// pageMarks is how long a page took to open, in milliseconds since its navigation began, as its own
// performance marks (page.js) say, and how long one sort of its records took.
type pageMarks struct {
	Charts float64 `json:"charts"` // the charts drawn
	Tables float64 `json:"tables"` // the first page of every table shown
	Sort   float64 `json:"sort"`   // sorting the records by thread and showing the first page
}

// readMarks is the script that reads pageMarks once the page has set the mark of its tables, or
// returns null before. It sorts the records by thread with a click on the column's head, which
// page.js handles at once, and times it.
const readMarks = `(() => {
	const mark = (name) => performance.getEntriesByName(name)[0];
	if (!mark("klockstat-tables")) {
		return null;
	}
	const start = performance.now();
	document.querySelector('#table-locks th[data-col="comm"]').click();
	const sort = performance.now() - start;
	return JSON.stringify({charts: mark("klockstat-charts").startTime, tables: mark("klockstat-tables").startTime, sort: sort});
})()`

// BenchmarkPageOpen opens reports of 100,000 and 1,000,000 records offline from file:// in headless
// Chromium and headless Firefox, a new browser each time, and reports when the charts were drawn
// (ms-charts) and the first table page shown (ms-table), counted from the start of the navigation, and
// how long sorting the records by thread took (ms-sort): whether the page is usable at that size.
func BenchmarkPageOpen(b *testing.B) {
	browsers := []struct {
		name, path string
		open       func(b *testing.B, dir, url string) pageMarks
	}{
		{"chromium", chromiumPath, chromiumMarks},
		{"firefox", firefoxPath, firefoxMarks},
	}
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			path := filepath.Join(dir, "report.html")
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := WriteHTML(f, syntheticCapture(n), HTMLOptions{Top: defaultTop}); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			for _, br := range browsers {
				b.Run("browser="+br.name, func(b *testing.B) {
					if _, err := os.Stat(br.path); err != nil {
						b.Skipf("no %s: %v", br.path, err)
					}
					var sum pageMarks
					for b.Loop() {
						m := br.open(b, b.TempDir(), "file://"+path)
						sum.Charts += m.Charts
						sum.Tables += m.Tables
						sum.Sort += m.Sort
					}
					b.ReportMetric(sum.Charts/float64(b.N), "ms-charts")
					b.ReportMetric(sum.Tables/float64(b.N), "ms-table")
					b.ReportMetric(sum.Sort/float64(b.N), "ms-sort")
				})
			}
		})
	}
}

// chromiumMarks opens url in a new headless Chromium whose proxy is a closed port, so that it is
// offline, and returns the page's marks.
func chromiumMarks(b *testing.B, dir, url string) pageMarks {
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromiumOptions(dir), chromedp.ProxyServer("127.0.0.1:9"))...)
	defer cancelAlloc()
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	defer cancelCtx()
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	defer cancelTimeout()
	if err := chromedp.Do(ctx); err != nil {
		b.Fatalf("starting %s: %v", chromiumPath, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.Fatalf("opening %s: %v", url, err)
	}
	text, err := chromedp.Run(ctx, chromedp.Poll[string](readMarks, chromedp.WithPollingInterval(10*time.Millisecond)))
	if err != nil {
		b.Fatalf("waiting for the tables: %v", err)
	}
	return parseMarks(b, text)
}

// firefoxMarks opens url in a new headless Firefox, offline, and returns the page's marks.
func firefoxMarks(b *testing.B, dir, url string) pageMarks {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	firefox := openFirefox(b, ctx, dir, url)
	for ctx.Err() == nil {
		if marks, ok := firefox.evaluate(readMarks); ok {
			return parseMarks(b, marks)
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("Firefox did not show the tables of %s: %v", url, ctx.Err())
	return pageMarks{}
}

// firefoxPage is a page open in a headless Firefox, driven through WebDriver BiDi.
type firefoxPage struct {
	*bidiSession
	context string // the browsing context showing the page
}

// openFirefox starts a headless Firefox that keeps its profile in dir and is offline (its proxy is a
// closed port), through WebDriver BiDi (no geckodriver needed), and navigates it to url without
// waiting for the page to load. Firefox is killed when ctx ends or the test does.
func openFirefox(tb testing.TB, ctx context.Context, dir, url string) *firefoxPage {
	tb.Helper()
	prefs := `user_pref("network.proxy.type", 1);
user_pref("network.proxy.http", "127.0.0.1");
user_pref("network.proxy.http_port", 9);
user_pref("network.proxy.ssl", "127.0.0.1");
user_pref("network.proxy.ssl_port", 9);
user_pref("network.proxy.allow_hijacking_localhost", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("app.update.enabled", false);
`
	if err := os.WriteFile(filepath.Join(dir, "user.js"), []byte(prefs), 0o644); err != nil {
		tb.Fatal(err)
	}
	const origin = "http://localhost"
	cmd := exec.CommandContext(ctx, firefoxPath, "--headless", "--no-remote", "--profile", dir,
		"--remote-debugging-port", "0", "--remote-allow-origins", origin, "--window-size", "1400,1000")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", firefoxPath, err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// Firefox says on stderr where WebDriver BiDi listens; the rest of its stderr is drained.
	listening := regexp.MustCompile(`WebDriver BiDi listening on (ws://\S+)`)
	endpoint := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				endpoint <- m[1]
			}
		}
		close(endpoint)
	}()
	ws, ok := <-endpoint
	if !ok {
		tb.Fatalf("%s did not say where WebDriver BiDi listens", firefoxPath)
	}
	conn, err := websocket.Dial(ws+"/session", "", origin)
	if err != nil {
		tb.Fatalf("connecting to %s: %v", ws, err)
	}
	tb.Cleanup(func() { conn.Close() })
	bidi := &bidiSession{tb: tb, conn: conn}
	bidi.call("session.new", map[string]any{"capabilities": map[string]any{}})
	var tree struct {
		Contexts []struct {
			Context string `json:"context"`
		} `json:"contexts"`
	}
	bidi.result(bidi.call("browsingContext.getTree", map[string]any{}), &tree)
	if len(tree.Contexts) == 0 {
		tb.Fatal("Firefox has no browsing context")
	}
	page := &firefoxPage{bidiSession: bidi, context: tree.Contexts[0].Context}
	bidi.call("browsingContext.navigate", map[string]any{"context": page.context, "url": url, "wait": "none"})
	return page
}

// evaluate runs expression in the page and returns its value when it is a string; ok is false when
// it is anything else (null: not yet).
func (p *firefoxPage) evaluate(expression string) (value string, ok bool) {
	p.tb.Helper()
	var evaluated struct {
		Type   string `json:"type"`
		Result struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	p.result(p.call("script.evaluate", map[string]any{
		"expression": expression, "target": map[string]any{"context": p.context}, "awaitPromise": false,
	}), &evaluated)
	if evaluated.Type != "success" {
		p.tb.Fatalf("evaluating in Firefox: %s: %s", evaluated.Type, evaluated.ExceptionDetails)
	}
	return evaluated.Result.Value, evaluated.Result.Type == "string"
}

// bidiSession sends WebDriver BiDi commands one at a time and returns their results.
type bidiSession struct {
	tb   testing.TB
	conn *websocket.Conn
	id   int
}

// call sends a command and returns its result, skipping the events that come before it.
func (s *bidiSession) call(method string, params any) json.RawMessage {
	s.tb.Helper()
	s.id++
	if err := websocket.JSON.Send(s.conn, map[string]any{"id": s.id, "method": method, "params": params}); err != nil {
		s.tb.Fatalf("WebDriver BiDi %s: %v", method, err)
	}
	for {
		var reply struct {
			ID      int             `json:"id"`
			Type    string          `json:"type"`
			Result  json.RawMessage `json:"result"`
			Error   string          `json:"error"`
			Message string          `json:"message"`
		}
		if err := websocket.JSON.Receive(s.conn, &reply); err != nil {
			s.tb.Fatalf("WebDriver BiDi %s: %v", method, err)
		}
		if reply.Type == "error" {
			s.tb.Fatalf("WebDriver BiDi %s: %s: %s", method, reply.Error, reply.Message)
		}
		if reply.ID == s.id {
			return reply.Result
		}
	}
}

func (s *bidiSession) result(raw json.RawMessage, v any) {
	s.tb.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		s.tb.Fatalf("WebDriver BiDi result %s: %v", raw, err)
	}
}

func parseMarks(b *testing.B, text string) pageMarks {
	b.Helper()
	var m pageMarks
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		b.Fatalf("the page's marks %q: %v", text, err)
	}
	return m
}
