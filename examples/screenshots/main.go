// Command screenshots takes examples/*.png of the example pages, run from the repository's root after
// go test ./report -run Examples -update; scale-rename.png, of a sweep examples/ lacks, is by hand.
package main

import (
	"cmp"
	"context"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	ctx, cancel := chromedp.NewContext(context.Background())
	defer cancel()
	dir, _ := filepath.Abs("examples")                    // fails only without a working directory, which Navigate then reports
	for _, s := range []struct{ page, png, part string }{ // part: the card shown, "" for the top of the page
		{"contend-report.html", "contend-report.png", ""}, {"diff.html", "diff.png", ""},
		{"phases-report.html", "phases-timeline.png", "figure:has(#klockTimeline)"}, {"phases-report.html", "phases-flame.png", "#flame"},
	} {
		shot := chromedp.CaptureScreenshot()
		if s.part != "" {
			shot = chromedp.Screenshot(s.part)
		}
		err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 2400), chromedp.Navigate("file://"+filepath.Join(dir, s.page)),
			chromedp.Sleep(time.Second)) // the charts and the flame graph's canvas draw
		png, shotErr := chromedp.Run(ctx, shot) // after a failed load, fails as well or is not written
		if err = cmp.Or(err, shotErr); err == nil {
			err = os.WriteFile(filepath.Join(dir, s.png), png, 0o644)
		}
		if err != nil {
			log.Fatalf("%s: %v", s.png, err)
		}
	}
}
