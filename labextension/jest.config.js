// The unit tests cover src/logic.ts, which imports nothing from JupyterLab, so plain
// ts-jest in Node is enough (no browser environment, no JupyterLab test utilities).
module.exports = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  roots: ['<rootDir>/src'],
  testMatch: ['**/__tests__/**/*.spec.ts'],
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      { tsconfig: { module: 'commonjs', types: ['jest'], strict: true, esModuleInterop: true } }
    ]
  }
};
