package report

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// openScale opens the scaling report of scaleSweep in Chromium, once its script has run.
func openScale(t *testing.T) context.Context {
	t.Helper()
	s := scaleSweep(t)
	return openPage(t, "scaling report", func(w io.Writer) error { return WriteScaleHTML(w, s, HTMLOptions{}) })
}

// waitFrame waits until the level frame shows label and the page in it has run its script and
// holds want (the frame's previous page may still be there for a moment), and returns its text.
func waitFrame(t *testing.T, ctx context.Context, label, want string) string {
	t.Helper()
	js := `(() => {
		const f = document.getElementById("level-frame");
		const d = f.contentDocument;
		return f.dataset.shown === ` + "`" + label + "`" + ` && d && d.documentElement && d.documentElement.classList.contains("js") &&
			d.body.innerText.includes(` + "`" + want + "`" + `) ? d.body.innerText : "";
	})()`
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if text := eval[string](t, ctx, js); text != "" {
			return text
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the level frame never showed %q with its script run", label)
	return ""
}

func TestScaleBrowserCulprits(t *testing.T) {
	ctx := openScale(t)
	first := eval[string](t, ctx, `document.querySelector("#culprit-locks tbody tr").innerText`)
	if !strings.Contains(first, "hot_lock") || !strings.Contains(first, "2.00") {
		t.Errorf("first lock culprit %q, want hot_lock with exponent 2.00", first)
	}
	if hidden := eval[bool](t, ctx, `document.getElementById("culprit-callers").hidden`); !hidden {
		t.Error("the callers' culprits are shown before their tab is chosen")
	}
	do(t, ctx, "choosing the callers", chromedp.Click(chromedp.CSS(`[data-culprits="culprit-callers"]`)))
	shown := eval[string](t, ctx, `(() => { const c = document.getElementById("culprit-callers"); return c.hidden ? "" : c.querySelector("tbody tr").innerText; })()`)
	if !strings.Contains(shown, "hot_caller") {
		t.Errorf("first caller culprit %q, want hot_caller", shown)
	}
	for _, id := range []string{"scale-throughput", "scale-types", "scale-locks"} {
		if !eval[bool](t, ctx, `!!document.querySelector("#`+id+` canvas")`) {
			t.Errorf("chart %s not drawn", id)
		}
	}
}

func TestScaleBrowserLevelSwitchAndDiff(t *testing.T) {
	ctx := openScale(t)
	waitFrame(t, ctx, "Level 1", "work -j 1")
	do(t, ctx, "choosing level 4", chromedp.Click(chromedp.CSS(`#level-tabs [data-level="4"]`)))
	if text := waitFrame(t, ctx, "Level 4", "work -j 4"); !strings.Contains(text, "hot_lock") {
		t.Errorf("level 4's report does not show its command and lock:\n%.500s", text)
	}
	if n := eval[int](t, ctx, `document.getElementById("level-frame").contentDocument.querySelectorAll(".chart canvas").length`); n == 0 {
		t.Error("level 4's report drew no chart: its ECharts was not put back")
	}
	do(t, ctx, "comparing levels 2 and 4",
		chromedp.SetValue(chromedp.CSS(`#diff-before`), "2"),
		chromedp.SetValue(chromedp.CSS(`#diff-after`), "4"),
		chromedp.Click(chromedp.CSS(`#diff-show`)))
	waitFrame(t, ctx, "Level 2 compared with level 4", "work -j 2")
	if basis := eval[string](t, ctx, `(document.getElementById("level-frame").contentDocument.getElementById("diff-basis") || {}).textContent || ""`); basis == "" {
		t.Error("the comparison of levels 2 and 4 is not a diff page")
	}
}

// The same in Firefox: the level frame shows a level's report with its charts, and the diff of two.
func TestScaleFirefoxLevelSwitchAndDiff(t *testing.T) {
	if _, err := os.Stat(firefoxPath); err != nil {
		t.Skipf("%s is missing (apt-get install firefox-esr), skipping the Firefox test", firefoxPath)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "scale.html")
	if err := os.WriteFile(path, writeScale(t, scaleSweep(t), HTMLOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	profile := filepath.Join(dir, "profile")
	if err := os.Mkdir(profile, 0o755); err != nil {
		t.Fatal(err)
	}
	page := openFirefox(t, ctx, profile, "file://"+path)
	// waitFor polls a JavaScript expression until it is a string.
	waitFor := func(what, expression string) string {
		t.Helper()
		for ctx.Err() == nil {
			if v, ok := page.evaluate(expression); ok {
				return v
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("Firefox never showed %s", what)
		return ""
	}
	frameText := func(label, want string) string {
		return `(() => {
			const f = document.getElementById("level-frame");
			const d = f && f.contentDocument;
			return f && f.dataset.shown === "` + label + `" && d && d.documentElement && d.documentElement.classList.contains("js") &&
				d.querySelectorAll(".chart canvas").length > 0 && d.body.textContent.includes("` + want + `") ? d.body.textContent : null;
		})()`
	}
	waitFor("level 1's report with its command", frameText("Level 1", "work -j 1"))
	if first := waitFor("the culprits", `document.querySelector("#culprit-locks tbody tr").textContent`); !strings.Contains(first, "hot_lock") {
		t.Errorf("first culprit %q, want hot_lock", first)
	}
	page.evaluate(`document.querySelector('#level-tabs [data-level="4"]').click()`)
	waitFor("level 4's report with its command", frameText("Level 4", "work -j 4"))
	page.evaluate(`(() => { document.getElementById("diff-before").value = "1"; document.getElementById("diff-after").value = "4"; document.getElementById("diff-show").click(); })()`)
	waitFor("the diff of levels 1 and 4", `(() => {
		const f = document.getElementById("level-frame");
		const d = f.contentDocument;
		return f.dataset.shown === "Level 1 compared with level 4" && d && d.getElementById("diff-basis") ? "ok" : null;
	})()`)
}
