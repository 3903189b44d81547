// The page's elements, found once by id in index.html.

/** Finds the elements the page works with. */
export function pageElements() {
  const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
  return {
    transcript: $<HTMLElement>("transcript"),
    form: $<HTMLFormElement>("composer"),
    promptInput: $<HTMLTextAreaElement>("prompt"),
    sendButton: $<HTMLButtonElement>("send"),
    cancelButton: $<HTMLButtonElement>("cancel"),
    modelSelect: $<HTMLSelectElement>("model"),
    policySelect: $<HTMLSelectElement>("policy"),
    hostForm: $<HTMLFormElement>("host-form"),
    hostUrlInput: $<HTMLInputElement>("host-url"),
    hostTokenInput: $<HTMLInputElement>("host-token"),
    hostStatus: $<HTMLElement>("host-status"),
    boundHost: $<HTMLElement>("bound-host"),
    pairDetails: $<HTMLDetailsElement>("pair"),
    hostChoice: $<HTMLElement>("host-choice"),
    welcome: $<HTMLElement>("welcome"),
    apiKeyInput: $<HTMLInputElement>("api-key"),
    newSessionButton: $<HTMLButtonElement>("new-session"),
    sessionLabel: $<HTMLElement>("session"),
    sessionsList: $<HTMLUListElement>("sessions"),
    statusLine: $<HTMLElement>("status"),
    runReason: $<HTMLElement>("run-reason"),
    refusal: $<HTMLElement>("refusal"),
    jumpButton: $<HTMLButtonElement>("jump"),
    authForm: $<HTMLFormElement>("auth"),
    authKey: $<HTMLInputElement>("auth-key"),
    authStatus: $<HTMLElement>("auth-status"),
    menuButton: $<HTMLButtonElement>("menu"),
    side: $<HTMLElement>("side"),
    linkForm: $<HTMLFormElement>("link-form"),
    linkCode: $<HTMLInputElement>("link-code"),
    linkDialog: $<HTMLDialogElement>("link-dialog"),
    linkDetails: $<HTMLElement>("link-details"),
    linkStatus: $<HTMLElement>("link-status"),
    linkApprove: $<HTMLButtonElement>("link-approve"),
    linkCancel: $<HTMLButtonElement>("link-cancel"),
  };
}

export type Elements = ReturnType<typeof pageElements>;
