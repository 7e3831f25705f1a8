/** The types of `parse-prometheus-text-format` (the package ships none), as its README describes its output. */
declare module "parse-prometheus-text-format" {
  export interface Sample {
    readonly labels?: Readonly<Record<string, string>>
    readonly value?: string
    readonly buckets?: Readonly<Record<string, string>>
    readonly count?: string
    readonly sum?: string
  }
  export interface Family {
    readonly name: string
    readonly help: string
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
    readonly metrics: ReadonlyArray<Sample>
  }
  const parsePrometheusTextFormat: (text: string) => ReadonlyArray<Family>
  export default parsePrometheusTextFormat
}
