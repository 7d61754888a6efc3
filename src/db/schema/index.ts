export * from "./credentials";
export * from "./events";
export * from "./jobs";
export * from "./settings";
export * from "./approvals";
export * from "./tasks";
export * from "./topology";
export * from "./team";
