/**
 * Saves `blob` as a file named `name`, as a link to it would: a fetch carries the token a plain link
 * cannot, so the body is fetched first and handed to the browser's download from memory.
 */
export function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its own copy once it starts; the address is let go after a while, not at once.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
