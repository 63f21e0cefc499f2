/** The admin page's files as text. */
export function buildAdmin(): Promise<{ html: string; js: string; css: string; icon: string }>;
