import { useRef } from 'preact/hooks';
import type { RecordInput } from './api.ts';
import { FOCUS_AFTER_DIALOG, FOCUS_FALLBACK_ID } from './dialogs.tsx';

/** What the page last did, said where it can be seen; a delete carries the values to undo it with. */
export interface Done {
  text: string;
  /** The deleted record's values, and the Idempotency-Key that adds them back once however often Undo is pressed. */
  undo?: { values: RecordInput; key: string };
}

/**
 * The confirmation of the page's last change, in a bar at the bottom of the window (so it is seen
 * wherever the change was made) that is also a live region. It stays until the next change or
 * Dismiss: no timer takes it, or its Undo, away before it is read. After a delete, the closing
 * dialog gives focus to Undo (the button that had it went with the record); Undo hands it to
 * Dismiss, which stays.
 */
export function Confirmation(props: { done: Done | undefined; onUndo: () => void; onDismiss: () => void }) {
  const { done } = props;
  const dismiss = useRef<HTMLButtonElement>(null);
  return (
    <div class={done === undefined ? 'confirmation empty' : 'confirmation'} role="status">
      {done === undefined ? null : (
        <>
          <p>{done.text}</p>
          <div class="confirmation-actions">
            {done.undo === undefined ? null : (
              <button
                type="button"
                {...{ [FOCUS_AFTER_DIALOG]: '' }}
                aria-label={`Undo: add ${done.undo.values.name} again`}
                onClick={() => {
                  dismiss.current?.focus();
                  props.onUndo();
                }}
              >
                Undo
              </button>
            )}
            <button
              type="button"
              ref={dismiss}
              aria-label="Dismiss this message"
              onClick={() => {
                // The button goes with the message: focus goes to the records' heading, not nowhere.
                document.getElementById(FOCUS_FALLBACK_ID)?.focus();
                props.onDismiss();
              }}
            >
              Dismiss
            </button>
          </div>
        </>
      )}
    </div>
  );
}
