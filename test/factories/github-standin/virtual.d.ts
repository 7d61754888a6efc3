// Served by the `crewplane:github-contract` plugin in vitest.config.ts.
declare module "virtual:github-contract" {
  const contract: import("./contract").Contract;
  export default contract;
}
