// The part of Apache ECharts that klockstat's pages use, bundled by update-echarts.sh into
// echarts.min.js: the charts and components report/charts.go builds options for, drawn on a canvas.
// A chart or component added there must be added here too.
import { init, getInstanceByDom, use, format } from "echarts/core";
import { PieChart, BarChart, BoxplotChart, LineChart } from "echarts/charts";
import { TooltipComponent, LegendComponent, TitleComponent, GridComponent, MarkLineComponent } from "echarts/components";
import { CanvasRenderer } from "echarts/renderers";

use([PieChart, BarChart, BoxplotChart, LineChart, TooltipComponent, LegendComponent, TitleComponent, GridComponent, MarkLineComponent, CanvasRenderer]);

// What page.js and the tests call.
window.echarts = { init, getInstanceByDom, format };
