/**
 * A tracer that records the spans it is asked for, for the tests of the spans an operation runs
 * in: each span's name, its parent's name, its attributes and whether it ended.
 */
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Tracer from "effect/Tracer"

export interface Recorded {
  readonly name: string
  readonly parent: string | undefined
  readonly attributes: Map<string, unknown>
  ended: boolean
}

/** A tracer that records every span it is asked for, with its attributes and its parent's name. */
export const recording = () => {
  const spans: Array<Recorded> = []
  const names = new Map<string, string>()
  let ids = 0
  const tracer = Tracer.make({
    span: (name, parent, context, links, startTime, kind) => {
      const spanId = `span-${++ids}`
      names.set(spanId, name)
      const recorded: Recorded = {
        name,
        parent: Option.match(parent, { onNone: () => undefined, onSome: (p) => names.get(p.spanId) ?? p.spanId }),
        attributes: new Map(),
        ended: false
      }
      spans.push(recorded)
      let status: Tracer.SpanStatus = { _tag: "Started", startTime }
      return {
        _tag: "Span",
        name,
        spanId,
        traceId: "trace",
        parent,
        context,
        get status() {
          return status
        },
        attributes: recorded.attributes,
        links,
        sampled: true,
        kind,
        end: (endTime, exit) => {
          recorded.ended = true
          status = { _tag: "Ended", startTime, endTime, exit }
        },
        attribute: (key, value) => void recorded.attributes.set(key, value),
        event: () => undefined,
        addLinks: () => undefined
      }
    },
    context: (f) => f()
  })
  return { spans, layer: Layer.setTracer(tracer) }
}
