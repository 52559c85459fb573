import type { ComponentChildren } from 'preact';

/**
 * A wide table's own horizontal scroll box, so the page never scrolls sideways on a phone. Focusable and
 * named, so keyboard users can scroll it too (axe: scrollable-region-focusable).
 */
export function TableScroll({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
    <section class="table-scroll" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}
