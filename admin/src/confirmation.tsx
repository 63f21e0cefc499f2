import { useEffect, useRef } from 'preact/hooks';
import type { RecordInput } from './api.ts';

/** What the page last did, said where it can be seen; a delete carries the values to undo it with. */
export interface Done {
  text: string;
  /** The deleted record's values, and the Idempotency-Key that adds them back once however often Undo is pressed. */
  undo?: { values: RecordInput; key: string };
}

/**
 * The confirmation of the page's last change, in a bar at the bottom of the window (so it is seen
 * wherever the change was made) that is also a live region. It stays until the next change or
 * Dismiss: no timer takes it, or its Undo, away before it is read. After a delete, focus goes to
 * Undo (the button that had it went with the record).
 */
export function Confirmation(props: { done: Done | undefined; onUndo: () => void; onDismiss: () => void }) {
  const { done } = props;
  const undo = useRef<HTMLButtonElement>(null);
  const offersUndo = done?.undo !== undefined;
  useEffect(() => {
    // After the closing dialog gives focus back (its own timeout), so this one comes last.
    if (offersUndo) setTimeout(() => undo.current?.focus());
  }, [done, offersUndo]);
  return (
    <div class={done === undefined ? 'confirmation empty' : 'confirmation'} role="status">
      {done === undefined ? null : (
        <>
          <p>{done.text}</p>
          <div class="confirmation-actions">
            {done.undo === undefined ? null : (
              <button
                type="button"
                ref={undo}
                aria-label={`Undo: add ${done.undo.values.name} again`}
                onClick={props.onUndo}
              >
                Undo
              </button>
            )}
            <button type="button" aria-label="Dismiss this message" onClick={props.onDismiss}>
              Dismiss
            </button>
          </div>
        </>
      )}
    </div>
  );
}
