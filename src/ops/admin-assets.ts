/** The admin page's files (admin/), as the service serves them. */
export interface AdminAssets {
  html: string;
  js: string;
  css: string;
  icon: string;
}

let built: Promise<AdminAssets> | undefined;

/**
 * Built once, on first use, when the service runs from source. In the bundles `npm start` runs,
 * scripts/build.mjs replaces this module by the files it built at build time.
 */
export function adminAssets(): Promise<AdminAssets> {
  built ??= import('../../admin/build.mjs').then(({ buildAdmin }) => buildAdmin());
  return built;
}
