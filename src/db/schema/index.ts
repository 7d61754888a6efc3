export * from "./credentials";
export * from "./events";
export * from "./jobs";
export * from "./settings";
export * from "./team";
export * from "./nodes";
export * from "./council";
export * from "./projects";
