/**
 * Charts as SVG, rendered headless with Vega (no browser, no canvas): a plain Vega specification is
 * parsed and rendered by a View with `renderer: 'none'`, whose `toSVG()` returns the markup.
 *
 * Two shapes cover the report: grouped bars (a figure per system and setting) and lines (a cost
 * curve against a size, optionally on log scales).
 */
import * as vega from 'vega';

export interface BarDatum {
  /** Category on the x axis, e.g. `1 process`. */
  readonly group: string;
  /** Bar within the group (colour), e.g. `graphile-worker tuned`. */
  readonly series: string;
  readonly value: number;
}

export interface BarChart {
  readonly title: string;
  readonly yTitle: string;
  readonly data: readonly BarDatum[];
  readonly logY?: boolean;
}

export interface LineDatum {
  readonly x: number;
  readonly y: number;
  readonly series: string;
}

export interface LineChart {
  readonly title: string;
  readonly xTitle: string;
  readonly yTitle: string;
  readonly data: readonly LineDatum[];
  readonly logX?: boolean;
  readonly logY?: boolean;
}

const WIDTH = 640;
const HEIGHT = 320;

/** A mark of type `type` drawn from the facet's `series` at its x and y fields, painted by `paint`. */
function seriesMark(type: 'line' | 'symbol', paint: Record<string, unknown>) {
  return { type, from: { data: 'series' }, encode: { enter: { x: { scale: 'x', field: 'x' }, y: { scale: 'y', field: 'y' }, ...paint } } };
}

function base(title: string): vega.Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega/v6.json',
    width: WIDTH,
    height: HEIGHT,
    padding: 8,
    background: 'white',
    title: { text: title, fontSize: 14 },
    legends: [{ fill: 'color', orient: 'right', labelLimit: 0 }],
  };
}

/** A Vega spec of grouped vertical bars. Non-finite values are dropped. */
export function barSpec(chart: BarChart): vega.Spec {
  const values = chart.data.filter((d) => Number.isFinite(d.value) && (!chart.logY || d.value > 0));
  return {
    ...base(chart.title),
    data: [{ name: 'table', values: values.map((d) => ({ ...d })) }],
    scales: [
      { name: 'x', type: 'band', domain: { data: 'table', field: 'group' }, range: 'width', padding: 0.2 },
      {
        name: 'y',
        type: chart.logY ? 'log' : 'linear',
        domain: { data: 'table', field: 'value' },
        range: 'height',
        nice: true,
        zero: !chart.logY,
      },
      { name: 'color', type: 'ordinal', domain: { data: 'table', field: 'series' }, range: 'category' },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', labelAngle: -20, labelAlign: 'right', labelLimit: 0 },
      { orient: 'left', scale: 'y', title: chart.yTitle, grid: true },
    ],
    marks: [
      {
        type: 'group',
        from: { facet: { data: 'table', name: 'facet', groupby: 'group' } },
        encode: { enter: { x: { scale: 'x', field: 'group' } } },
        signals: [{ name: 'width', update: "bandwidth('x')" }],
        scales: [{ name: 'inner', type: 'band', range: 'width', domain: { data: 'table', field: 'series' } }],
        marks: [
          {
            type: 'rect',
            from: { data: 'facet' },
            encode: {
              enter: {
                x: { scale: 'inner', field: 'series' },
                width: { scale: 'inner', band: 1 },
                y: { scale: 'y', field: 'value' },
                y2: chart.logY ? { signal: 'height' } : { scale: 'y', value: 0 },
                fill: { scale: 'color', field: 'series' },
                tooltip: { field: 'value' },
              },
            },
          },
        ],
      },
    ],
  } as vega.Spec;
}

/** A Vega spec of one line (with points) per series. Non-finite points are dropped. */
export function lineSpec(chart: LineChart): vega.Spec {
  const ok = (v: number, log?: boolean) => Number.isFinite(v) && (!log || v > 0);
  const values = chart.data.filter((d) => ok(d.x, chart.logX) && ok(d.y, chart.logY));
  return {
    ...base(chart.title),
    data: [{ name: 'table', values: values.map((d) => ({ ...d })) }],
    scales: [
      { name: 'x', type: chart.logX ? 'log' : 'linear', domain: { data: 'table', field: 'x' }, range: 'width', nice: true, zero: false },
      { name: 'y', type: chart.logY ? 'log' : 'linear', domain: { data: 'table', field: 'y' }, range: 'height', nice: true, zero: !chart.logY },
      { name: 'color', type: 'ordinal', domain: { data: 'table', field: 'series' }, range: 'category' },
    ],
    axes: [
      { orient: 'bottom', scale: 'x', title: chart.xTitle, grid: true, values: [...new Set(values.map((d) => d.x))].sort((a, b) => a - b), format: '~s' },
      { orient: 'left', scale: 'y', title: chart.yTitle, grid: true },
    ],
    marks: [
      {
        type: 'group',
        from: { facet: { data: 'table', name: 'series', groupby: 'series' } },
        marks: [
          { ...seriesMark('line', { stroke: { scale: 'color', field: 'series' }, strokeWidth: { value: 2 } }), sort: { field: 'datum.x' } },
          seriesMark('symbol', { fill: { scale: 'color', field: 'series' }, size: { value: 40 } }),
        ],
      },
    ],
  } as vega.Spec;
}

/** Renders a Vega spec to SVG markup, headless. */
export async function renderSvg(spec: vega.Spec): Promise<string> {
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
